// Which entries a tree upload holds (common/storage/tree_transfer.h): the asked-for
// paths under a root with their parent folders, folders taken whole,
// symlinks kept and checked to stay inside, never followed.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <set>

#include <fmt/format.h>

#include "common/folder_walk.h"
#include "common/path_parts.h"
#include "common/storage/tar_package.h"
#include "common/storage/tree_internal.h"

namespace clusterd::tree_internal {
namespace {

class Scanner final : public FolderVisitor {
 public:
  explicit Scanner(std::string root) : root_(std::move(root)) {}

  Result<ScannedPaths> Run(const std::vector<std::string>& paths) {
    RETURN_IF_ERROR(Prepare());
    for (const std::string& path : paths) RETURN_IF_ERROR(Add(path));
    RETURN_IF_ERROR(CheckLinks());
    return std::move(result_);
  }

 private:
  std::string Full(const std::string& rel) const { return rel.empty() ? root_ : root_ + "/" + rel; }

  Status Unreadable(const std::string& rel, int err) const override {
    return Status::IOError(fmt::format("cannot read {}: {}", Full(rel), std::strerror(err)));
  }

  Status Prepare() {
    while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
    struct stat st;
    if (root_.empty() || stat(root_.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      return Status::NotFound(fmt::format("{} is not a folder", root_.empty() ? "\"\"" : root_));
    }
    // For absolute symlinks into the folder, which become relative.
    std::string absolute = root_;
    char buffer[PATH_MAX];
    if (absolute[0] != '/' && getcwd(buffer, sizeof buffer) != nullptr) absolute = std::string(buffer) + "/" + root_;
    root_parts_ = LexicalParts(absolute);
    if (realpath(root_.c_str(), buffer) != nullptr) real_root_parts_ = LexicalParts(buffer);
    return Status::Ok();
  }

  // One asked-for path: its parent folders, then itself (a folder whole).
  Status Add(const std::string& asked) {
    if (!asked.empty() && asked[0] == '/') {
      return Status::InvalidArgument(fmt::format("{}: path {} is absolute, not relative to the folder", root_, asked));
    }
    std::vector<std::string> parts = PathParts(asked);
    for (const auto& part : parts) {
      if (part == "..") return Status::InvalidArgument(fmt::format("{}: path {} climbs out with ..", root_, asked));
    }
    if (parts.empty()) return Walk("");
    struct stat st;
    for (size_t depth = 1; depth <= parts.size(); ++depth) {
      std::string rel = JoinParts(parts, 0, depth);
      if (lstat(Full(rel).c_str(), &st) != 0) {
        if (errno != ENOENT && errno != ENOTDIR) return Unreadable(rel, errno);
        result_.missing.push_back(asked);
        return Status::Ok();
      }
      if (depth == parts.size()) break;
      if (S_ISLNK(st.st_mode)) {
        return Status::InvalidArgument(
            fmt::format("{}: path {} lies under symlink {}, which is not followed", root_, asked, rel));
      }
      if (!S_ISDIR(st.st_mode)) {
        result_.missing.push_back(asked);
        return Status::Ok();
      }
      RETURN_IF_ERROR(Visit(AT_FDCWD, Full(rel), rel, st));
    }
    std::string rel = JoinParts(parts, 0, parts.size());
    RETURN_IF_ERROR(Visit(AT_FDCWD, Full(rel), rel, st));
    if (S_ISLNK(st.st_mode)) return AddLinkTarget(rel);
    return S_ISDIR(st.st_mode) ? Walk(rel) : Status::Ok();
  }

  // An asked-for path that is itself a symlink brings what it points to
  // as well, so that it resolves where the tree lands: `outputs: [latest]`,
  // a link to runs/run_3/, must not come back as a dangling link without the
  // model in it. Where it points out of the folder, CheckLinks refuses it.
  Status AddLinkTarget(const std::string& link) {
    if (!followed_.insert(link).second) return Status::Ok();  // a loop of links
    const std::string& target = result_.entries.at(link).entry.link_target();
    if (target.empty() || target[0] == '/') return Status::Ok();
    std::vector<std::string> resolved;
    for (const std::string& part : PathParts(ParentOf(link) + "/" + target)) {
      if (part == ".") continue;
      if (part != "..") {
        resolved.push_back(part);
      } else if (resolved.empty()) {
        return Status::Ok();  // out of the folder
      } else {
        resolved.pop_back();
      }
    }
    return Add(JoinParts(resolved, 0, resolved.size()));
  }

  // A folder's contents, recursively; once, however often it is asked for.
  Status Walk(const std::string& rel) {
    if (!walked_.insert(rel).second) return Status::Ok();
    return WalkFolder(root_, rel, this);
  }

  // FolderVisitor: each name of a walked folder; a folder not walked yet is entered.
  Status OnName(int dir_fd, const std::string& name, const std::string& rel, bool* enter) override {
    struct stat st;
    if (fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return Unreadable(rel, errno);
    RETURN_IF_ERROR(Visit(dir_fd, name, rel, st));
    *enter = S_ISDIR(st.st_mode) && walked_.insert(rel).second;
    return Status::Ok();
  }

  // Records one entry, once; `name` is relative to `dir_fd`.
  Status Visit(int dir_fd, const std::string& name, const std::string& rel, const struct stat& st) {
    if (result_.entries.count(rel)) return Status::Ok();
    ScannedEntry item;
    item.entry.set_path(rel);
    item.entry.set_mode(st.st_mode & 0777);
    if (S_ISREG(st.st_mode)) {
      item.entry.set_size(st.st_size);
      item.stamp = StampOfStat(st);
      ++result_.files;
      result_.bytes += st.st_size;
    } else if (S_ISDIR(st.st_mode)) {
      item.entry.set_is_dir(true);
    } else if (S_ISLNK(st.st_mode)) {
      char buffer[PATH_MAX];
      ssize_t n = readlinkat(dir_fd, name.c_str(), buffer, sizeof buffer);
      if (n < 0) return Unreadable(rel, errno);
      std::string target(buffer, static_cast<size_t>(n));
      original_targets_[rel] = target;
      item.entry.set_link_target(target[0] == '/' ? Relative(rel, target) : target);
    } else {
      result_.skipped.push_back(fmt::format("{}: skipped {} ({})", root_, rel, SpecialFileKind(st.st_mode)));
      return Status::Ok();
    }
    result_.entries[rel] = std::move(item);
    return Status::Ok();
  }

  // An absolute target into the folder as a relative one from the link's
  // folder; "" (refused by CheckLinks) when it points elsewhere.
  std::string Relative(const std::string& link, const std::string& target) const {
    std::vector<const std::vector<std::string>*> roots;
    for (const auto* root : {&root_parts_, &real_root_parts_}) {
      if (!root->empty()) roots.push_back(root);
    }
    return RelativeTargetInside(link, target, roots).value_or("");
  }

  // A relative target can climb out with "..", also through other symlinks.
  Status CheckLinks() const {
    std::map<std::string, std::string> links;
    for (const auto& entry : original_targets_) {
      links.emplace(entry.first, result_.entries.at(entry.first).entry.link_target());
    }
    for (const auto& [path, target] : links) {
      if (!SymlinkStaysInside(path, target, links)) {
        return Status::InvalidArgument(fmt::format("{}: {} -> {} is a symlink out of the folder", root_, path,
                                                   original_targets_.at(path)));
      }
    }
    return Status::Ok();
  }

  std::string root_;
  std::vector<std::string> root_parts_;
  std::vector<std::string> real_root_parts_;
  std::map<std::string, std::string> original_targets_;  // symlinks as read
  std::set<std::string> walked_;
  std::set<std::string> followed_;  // asked-for symlinks whose targets were added
  ScannedPaths result_;
};

}  // namespace

FileStamp StampOfStat(const struct stat& st) {
  return FileStamp{static_cast<uint64_t>(st.st_size), StatNanos(st.st_mtim), StatNanos(st.st_ctim),
                   static_cast<uint64_t>(st.st_ino)};
}

bool SameBytes(const FileStamp& now, const FileStamp& then) {
  return now.size == then.size && now.mtime_ns == then.mtime_ns && now.ino == then.ino;
}

Result<ScannedPaths> ScanPaths(const std::string& root, const std::vector<std::string>& paths) {
  return Scanner(root).Run(paths);
}

}  // namespace clusterd::tree_internal
