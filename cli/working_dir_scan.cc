#include "cli/working_dir_scan.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "common/folder_walk.h"
#include "common/ignore_rules.h"
#include "common/storage/tar_package.h"

namespace clusterd {
namespace {

std::string OutsideMessage(const std::string& root, const std::string& path, const std::string& target) {
  return fmt::format(
      "working_dir {}: {} -> {} is a symlink pointing out of the folder; it would not exist on the nodes "
      "(drop it with `excludes:`)",
      root, path, target);
}

class Walker final : public FolderVisitor {
 public:
  Walker(std::string root, const ScanOptions& options) : options_(options) {
    tree_.root = std::move(root);
    root_parts_ = LexicalParts(tree_.root);
    char real[PATH_MAX];
    if (realpath(tree_.root.c_str(), real) != nullptr) real_root_parts_ = LexicalParts(real);
    for (size_t i = 0; i < options.excludes.size(); ++i) {
      rules_.AddOverride(options.excludes[i], fmt::format("excludes[{}]", i));
    }
  }

  Result<ScannedTree> Run() {
    RETURN_IF_ERROR(WalkFolder(tree_.root, "", this));
    RETURN_IF_ERROR(CheckLinks());
    RETURN_IF_ERROR(CheckSize());
    std::sort(tree_.entries.begin(), tree_.entries.end(),
              [](const TreeEntry& a, const TreeEntry& b) { return a.path < b.path; });
    return std::move(tree_);
  }

 private:
  std::string Shown(const std::string& rel) const { return rel.empty() ? tree_.root : rel; }

  Status CannotRead(const std::string& what, const std::string& rel, int err) const {
    return Status::IOError(
        fmt::format("working_dir {}: cannot read {} {}: {}", tree_.root, what, Shown(rel), std::strerror(err)));
  }

  Status ReadIgnoreFile(int dir_fd, const std::string& rel) {
    std::string label = rel.empty() ? ".clusterignore" : rel + "/.clusterignore";
    int fd = openat(dir_fd, ".clusterignore", O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      int err = errno;
      if (err == ENOENT) return Status::Ok();
      // Without search permission on the folder even its names are out of reach.
      struct stat st;
      bool exists = fstatat(dir_fd, ".clusterignore", &st, 0) == 0;
      return exists ? CannotRead("file", label, err) : CannotRead("folder", rel, err);
    }
    std::string text;
    char buffer[8192];
    ssize_t n;
    while ((n = read(fd, buffer, sizeof buffer)) > 0) text.append(buffer, static_cast<size_t>(n));
    int err = errno;
    close(fd);
    if (n < 0) return CannotRead("file", label, err);
    rules_.AddFile(text, rel, label);
    return Status::Ok();
  }

  // FolderVisitor: a folder's .clusterignore counts from that folder on.
  Status OnFolder(int dir_fd, const std::string& rel) override { return ReadIgnoreFile(dir_fd, rel); }

  Status Unreadable(const std::string& rel, int err) const override { return CannotRead("folder", rel, err); }

  Status OnName(int dir_fd, const std::string& name, const std::string& rel, bool* enter) override {
    struct stat st;
    if (fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      return errno == ENOENT ? Status::Ok() : CannotRead("file", rel, errno);  // gone: nothing to pack
    }
    if (rules_.IsIgnoredInWalk(rel, S_ISDIR(st.st_mode))) return Status::Ok();
    TreeEntry e;
    e.path = rel;
    e.mode = st.st_mode & 0777;
    e.mtime_ns = StatNanos(st.st_mtim);
    e.ctime_ns = StatNanos(st.st_ctim);
    e.dev = st.st_dev;
    e.ino = st.st_ino;
    if (S_ISREG(st.st_mode)) {
      // Opened here so that an unreadable file fails the scan, not the packing.
      int fd = openat(dir_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
      if (fd < 0) return CannotRead("file", rel, errno);
      close(fd);
      e.type = EntryType::kFile;
      e.size = static_cast<uint64_t>(st.st_size);
      tree_.file_bytes += e.size;
      ++tree_.file_count;
    } else if (S_ISDIR(st.st_mode)) {
      e.type = EntryType::kDir;
      *enter = true;
    } else if (S_ISLNK(st.st_mode)) {
      e.type = EntryType::kSymlink;
      RETURN_IF_ERROR(ReadLink(dir_fd, name, &e));
    } else {
      tree_.warnings.push_back(
          fmt::format("working_dir {}: skipped {} ({})", tree_.root, rel, SpecialFileKind(st.st_mode)));
      return Status::Ok();
    }
    tree_.entries.push_back(std::move(e));
    return Status::Ok();
  }

  Status ReadLink(int dir_fd, const std::string& name, TreeEntry* e) {
    char buffer[PATH_MAX];
    ssize_t n = readlinkat(dir_fd, name.c_str(), buffer, sizeof buffer);
    if (n < 0) return CannotRead("symlink", e->path, errno);
    std::string target(buffer, static_cast<size_t>(n));
    original_targets_[e->path] = target;
    if (target.empty() || target[0] != '/') {
      e->link_target = target;
      return Status::Ok();
    }
    std::vector<const std::vector<std::string>*> roots = {&root_parts_};
    if (!real_root_parts_.empty()) roots.push_back(&real_root_parts_);
    std::optional<std::string> inside = RelativeTargetInside(e->path, target, roots);
    if (!inside) return Status::InvalidArgument(OutsideMessage(tree_.root, e->path, target));
    e->link_target = *inside;
    return Status::Ok();
  }

  // Relative targets may climb out with "..", also through other symlinks.
  Status CheckLinks() {
    std::map<std::string, std::string> links;
    for (const auto& e : tree_.entries) {
      if (e.type == EntryType::kSymlink) links.emplace(e.path, e.link_target);
    }
    for (const auto& [path, target] : links) {
      if (!SymlinkStaysInside(path, target, links)) {
        return Status::InvalidArgument(OutsideMessage(tree_.root, path, original_targets_[path]));
      }
    }
    return Status::Ok();
  }

  Status CheckSize() {
    if (tree_.file_bytes <= options_.max_bytes) return Status::Ok();
    std::vector<const TreeEntry*> files;
    for (const auto& e : tree_.entries) {
      if (e.type == EntryType::kFile) files.push_back(&e);
    }
    size_t shown = std::min<size_t>(5, files.size());
    std::partial_sort(files.begin(), files.begin() + static_cast<long>(shown), files.end(),
                      [](const TreeEntry* a, const TreeEntry* b) {
                        return a->size != b->size ? a->size > b->size : a->path < b->path;
                      });
    std::string largest;
    for (size_t i = 0; i < shown; ++i) {
      largest += fmt::format("{}{} {}", i ? ", " : "", files[i]->path, HumanBytes(files[i]->size));
    }
    return Status::ResourceExhausted(fmt::format(
        "working_dir {} is {}, over the {} cap (max_package_size); largest files: {}; "
        "leave them out with `excludes:` or .clusterignore",
        tree_.root, HumanBytes(tree_.file_bytes), HumanBytes(options_.max_bytes), largest));
  }

  const ScanOptions& options_;
  ScannedTree tree_;
  IgnoreRules rules_;
  std::vector<std::string> root_parts_;
  std::vector<std::string> real_root_parts_;
  std::map<std::string, std::string> original_targets_;
};

}  // namespace

Result<ScannedTree> ScanWorkingDir(const std::string& root, const ScanOptions& options) {
  if (root.empty()) return Status::InvalidArgument("working_dir is empty");
  std::string absolute = root;
  if (absolute[0] != '/') {
    char cwd[PATH_MAX];
    if (getcwd(cwd, sizeof cwd) == nullptr) return Status::IOError(std::string("getcwd: ") + std::strerror(errno));
    absolute = std::string(cwd) + "/" + root;
  }
  while (absolute.size() > 1 && absolute.back() == '/') absolute.pop_back();
  struct stat st;
  if (stat(absolute.c_str(), &st) != 0) {
    if (errno == ENOENT) return Status::NotFound("working_dir " + absolute + " does not exist");
    return Status::IOError(fmt::format("working_dir {}: {}", absolute, std::strerror(errno)));
  }
  if (!S_ISDIR(st.st_mode)) return Status::InvalidArgument("working_dir " + absolute + " is not a folder");
  return Walker(absolute, options).Run();
}

}  // namespace clusterd
