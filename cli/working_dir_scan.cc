#include "cli/working_dir_scan.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "common/ignore_rules.h"
#include "common/tar_package.h"

namespace clusterd {
namespace {

std::vector<std::string> Components(const std::string& path) {
  std::vector<std::string> out;
  size_t begin = 0;
  while (begin <= path.size()) {
    size_t end = path.find('/', begin);
    if (end == std::string::npos) end = path.size();
    std::string part = path.substr(begin, end - begin);
    if (part == "..") {
      if (!out.empty()) out.pop_back();
    } else if (!part.empty() && part != ".") {
      out.push_back(std::move(part));
    }
    begin = end + 1;
  }
  return out;
}

std::string Join(const std::vector<std::string>& parts, size_t from = 0) {
  std::string out;
  for (size_t i = from; i < parts.size(); ++i) out += (out.empty() ? "" : "/") + parts[i];
  return out;
}

// `path` (absolute, lexically normalized) relative to `root`, if under it.
std::optional<std::vector<std::string>> Under(const std::vector<std::string>& path,
                                              const std::vector<std::string>& root) {
  if (path.size() < root.size() || !std::equal(root.begin(), root.end(), path.begin())) return std::nullopt;
  return std::vector<std::string>(path.begin() + static_cast<long>(root.size()), path.end());
}

// The relative target that leads from folder `from` to `to` (both relative
// to the root).
std::string RelativeTarget(const std::vector<std::string>& from, const std::vector<std::string>& to) {
  size_t common = 0;
  while (common < from.size() && common < to.size() && from[common] == to[common]) ++common;
  std::string out;
  for (size_t i = common; i < from.size(); ++i) out += out.empty() ? ".." : "/..";
  std::string down = Join(to, common);
  if (!down.empty()) out += (out.empty() ? "" : "/") + down;
  return out.empty() ? "." : out;
}

int64_t Nanos(const timespec& t) { return int64_t{t.tv_sec} * 1000000000 + t.tv_nsec; }

const char* SpecialKind(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device file";
  return "not a file, folder or symlink";
}

std::string OutsideMessage(const std::string& root, const std::string& path, const std::string& target) {
  return fmt::format(
      "working_dir {}: {} -> {} is a symlink pointing out of the folder; it would not exist on the nodes "
      "(drop it with `excludes:`)",
      root, path, target);
}

class Walker {
 public:
  Walker(std::string root, const ScanOptions& options) : options_(options) {
    tree_.root = std::move(root);
    root_parts_ = Components(tree_.root);
    char real[PATH_MAX];
    if (realpath(tree_.root.c_str(), real) != nullptr) real_root_parts_ = Components(real);
    for (size_t i = 0; i < options.excludes.size(); ++i) {
      rules_.AddOverride(options.excludes[i], fmt::format("excludes[{}]", i));
    }
  }

  Result<ScannedTree> Run() {
    RETURN_IF_ERROR(Walk(""));
    RETURN_IF_ERROR(CheckLinks());
    RETURN_IF_ERROR(CheckSize());
    std::sort(tree_.entries.begin(), tree_.entries.end(),
              [](const TreeEntry& a, const TreeEntry& b) { return a.path < b.path; });
    return std::move(tree_);
  }

 private:
  std::string Shown(const std::string& rel) const { return rel.empty() ? tree_.root : rel; }

  Status Unreadable(const std::string& what, const std::string& rel, int err) const {
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
      return exists ? Unreadable("file", label, err) : Unreadable("folder", rel, err);
    }
    std::string text;
    char buffer[8192];
    ssize_t n;
    while ((n = read(fd, buffer, sizeof buffer)) > 0) text.append(buffer, static_cast<size_t>(n));
    int err = errno;
    close(fd);
    if (n < 0) return Unreadable("file", label, err);
    rules_.AddFile(text, rel, label);
    return Status::Ok();
  }

  Status Walk(const std::string& rel) {
    std::string dir_path = rel.empty() ? tree_.root : tree_.root + "/" + rel;
    // The root may be reached through a symlink; nothing below it is.
    int fd = open(dir_path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | (rel.empty() ? 0 : O_NOFOLLOW));
    if (fd < 0) return Unreadable("folder", rel, errno);
    Status ignore_file = ReadIgnoreFile(fd, rel);
    DIR* dir = ignore_file.ok() ? fdopendir(fd) : nullptr;
    if (dir == nullptr) {
      int err = errno;
      close(fd);
      return ignore_file.ok() ? Unreadable("folder", rel, err) : ignore_file;
    }
    std::unique_ptr<DIR, int (*)(DIR*)> closer(dir, closedir);
    std::vector<std::string> subdirs;
    errno = 0;
    while (dirent* d = readdir(dir)) {
      std::string name = d->d_name;
      if (name == "." || name == "..") continue;
      std::string child = rel.empty() ? name : rel + "/" + name;
      RETURN_IF_ERROR(Visit(fd, name, child, &subdirs));
      errno = 0;
    }
    if (errno != 0) return Unreadable("folder", rel, errno);
    closer.reset();
    for (const std::string& sub : subdirs) RETURN_IF_ERROR(Walk(sub));
    return Status::Ok();
  }

  Status Visit(int dir_fd, const std::string& name, const std::string& rel, std::vector<std::string>* subdirs) {
    struct stat st;
    if (fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      return errno == ENOENT ? Status::Ok() : Unreadable("file", rel, errno);  // gone: nothing to pack
    }
    if (rules_.IsIgnoredInWalk(rel, S_ISDIR(st.st_mode))) return Status::Ok();
    TreeEntry e;
    e.path = rel;
    e.mode = st.st_mode & 0777;
    e.mtime_ns = Nanos(st.st_mtim);
    e.ctime_ns = Nanos(st.st_ctim);
    e.dev = st.st_dev;
    e.ino = st.st_ino;
    if (S_ISREG(st.st_mode)) {
      // Opened here so that an unreadable file fails the scan, not the packing.
      int fd = openat(dir_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
      if (fd < 0) return Unreadable("file", rel, errno);
      close(fd);
      e.type = EntryType::kFile;
      e.size = static_cast<uint64_t>(st.st_size);
      tree_.file_bytes += e.size;
      ++tree_.file_count;
    } else if (S_ISDIR(st.st_mode)) {
      e.type = EntryType::kDir;
      subdirs->push_back(rel);
    } else if (S_ISLNK(st.st_mode)) {
      e.type = EntryType::kSymlink;
      RETURN_IF_ERROR(ReadLink(dir_fd, name, &e));
    } else {
      tree_.warnings.push_back(fmt::format("working_dir {}: skipped {} ({})", tree_.root, rel, SpecialKind(st.st_mode)));
      return Status::Ok();
    }
    tree_.entries.push_back(std::move(e));
    return Status::Ok();
  }

  Status ReadLink(int dir_fd, const std::string& name, TreeEntry* e) {
    char buffer[PATH_MAX];
    ssize_t n = readlinkat(dir_fd, name.c_str(), buffer, sizeof buffer);
    if (n < 0) return Unreadable("symlink", e->path, errno);
    std::string target(buffer, static_cast<size_t>(n));
    original_targets_[e->path] = target;
    if (target.empty() || target[0] != '/') {
      e->link_target = target;
      return Status::Ok();
    }
    std::vector<std::string> abs = Components(target);
    auto inside = Under(abs, root_parts_);
    if (!inside && !real_root_parts_.empty()) inside = Under(abs, real_root_parts_);
    if (!inside) return Status::InvalidArgument(OutsideMessage(tree_.root, e->path, target));
    std::vector<std::string> from = Components(e->path);
    from.pop_back();
    e->link_target = RelativeTarget(from, *inside);
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
