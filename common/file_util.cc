#include "common/file_util.h"

#include <limits.h>

#include <dirent.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include <fmt/format.h>

namespace clusterd {

Status MakeDirs(const std::string& path, mode_t mode) {
  // The deepest folder first: on the launch path its parents nearly always
  // exist, and one mkdir beats one per component of the path.
  std::string trimmed = path;
  while (trimmed.size() > 1 && trimmed.back() == '/') trimmed.pop_back();
  if (trimmed.empty() || trimmed == "/") return Status::Ok();
  if (mkdir(trimmed.c_str(), mode) == 0) return Status::Ok();
  int error = errno;
  if (error == ENOENT) {
    size_t slash = trimmed.find_last_of('/');
    if (slash != std::string::npos && slash > 0) RETURN_IF_ERROR(MakeDirs(trimmed.substr(0, slash), mode));
    if (mkdir(trimmed.c_str(), mode) == 0) return Status::Ok();
    error = errno;
  }
  struct stat st {};
  if (error == EEXIST && stat(trimmed.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return Status::Ok();
  return Status::IOError(fmt::format("cannot create {}/: {}", trimmed, std::strerror(error)));
}

Status EnsurePrivateDir(const std::string& path) {
  std::string parent = path.substr(0, path.find_last_of('/'));
  if (!parent.empty() && parent != path) RETURN_IF_ERROR(MakeDirs(parent));
  if (mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) {
    return Status::IOError(fmt::format("cannot create {}: {}", path, std::strerror(errno)));
  }
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) return Status::IOError(fmt::format("cannot stat {}: {}", path, std::strerror(errno)));
  auto refuse = [&](const std::string& why) {
    return Status::FailedPrecondition(fmt::format(
        "refusing {}: {}; it must be a folder of yours that nobody else can write (remove it, or choose another "
        "with --temp-dir / --state-dir)", path, why));
  };
  if (S_ISLNK(st.st_mode)) return refuse("it is a symlink");
  if (!S_ISDIR(st.st_mode)) return refuse("it is not a folder");
  if (st.st_uid != geteuid()) return refuse(fmt::format("it belongs to uid {}, not {}", st.st_uid, geteuid()));
  if (st.st_mode & 022) return refuse(fmt::format("group or others may write it (mode {:o})", st.st_mode & 0777));
  return Status::Ok();
}

Result<std::string> ReadWholeFile(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int error = errno;
    std::string why = fmt::format("cannot read {}: {}", path, std::strerror(error));
    return error == ENOENT ? Status::NotFound(why) : Status::IOError(why);
  }
  std::string text;
  char buffer[8192];
  while (true) {
    ssize_t n = read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int error = errno;
      close(fd);
      return Status::IOError(fmt::format("cannot read {}: {}", path, std::strerror(error)));
    }
    if (n == 0) break;
    text.append(buffer, static_cast<size_t>(n));
  }
  close(fd);
  return text;
}

Result<std::string> ReadFileTrimmed(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, ReadWholeFile(path));
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ' || text.back() == '\r')) {
    text.pop_back();
  }
  return text;
}

Status WriteAllAt(int fd, std::string_view data, int64_t offset, const std::string& path) {
  while (!data.empty()) {
    ssize_t n = offset >= 0 ? pwrite(fd, data.data(), data.size(), static_cast<off_t>(offset))
                            : write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::IOError(fmt::format("cannot write {}: {}", path, std::strerror(errno)));
    if (offset >= 0) offset += n;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return Status::Ok();
}

Status ReadExactlyAt(int fd, char* out, size_t n, int64_t offset, const std::string& path) {
  while (n > 0) {
    ssize_t got = pread(fd, out, n, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return Status::IOError(fmt::format("cannot read {}: {}", path, std::strerror(errno)));
    if (got == 0) return Status::IOError(fmt::format("cannot read {}: it ends at byte {}", path, offset));
    out += got;
    offset += got;
    n -= static_cast<size_t>(got);
  }
  return Status::Ok();
}

Status WriteFileAtomic(const std::string& path, const std::string& content, int mode, Durability durability) {
  // Unique per process and call: two writers of one path must not share a temporary.
  static std::atomic<unsigned> counter{0};
  std::string tmp = fmt::format("{}.tmp{}-{}", path, getpid(), counter++);
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
  if (fd < 0) return Status::IOError(fmt::format("cannot write {}: {}", tmp, std::strerror(errno)));
  fchmod(fd, mode);  // the umask must not widen or narrow what was asked
  if (Status written = WriteAllAt(fd, content, -1, tmp); !written.ok()) {
    close(fd);
    unlink(tmp.c_str());
    return written;
  }
  if (durability == Durability::kSurvivesPowerLoss) fsync(fd);
  close(fd);
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    int error = errno;
    unlink(tmp.c_str());
    return Status::IOError(fmt::format("cannot rename {}: {}", tmp, std::strerror(error)));
  }
  return Status::Ok();
}

void StartWriteback(int fd, int64_t offset, int64_t length) {
  if (length > 0) sync_file_range(fd, offset, length, SYNC_FILE_RANGE_WRITE);
}

namespace {

// Clears the immutable and append-only flags of `name` in folder `dir_fd`
// (what root's `chattr +i` sets, which not even root may remove). Best
// effort: a file system without the flags, or a user who may not clear
// them, leaves them.
void ClearUnremovableFlags(int dir_fd, const char* name) {
  const int fd = openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return;
  int flags = 0;
  if (ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0 && (flags & (FS_IMMUTABLE_FL | FS_APPEND_FL)) != 0) {
    flags &= ~(FS_IMMUTABLE_FL | FS_APPEND_FL);
    ioctl(fd, FS_IOC_SETFLAGS, &flags);
  }
  close(fd);
}

// The names of the folders in folder `fd` (and of entries whose type the
// file system does not say), clearing every entry's unremovable flags on
// the way; fd stays open.
std::vector<std::string> Subfolders(int fd) {
  std::vector<std::string> names;
  const int copy = dup(fd);
  DIR* dir = copy >= 0 ? fdopendir(copy) : nullptr;
  if (dir == nullptr) {
    if (copy >= 0) close(copy);
    return names;
  }
  while (const dirent* entry = readdir(dir)) {
    const std::string name = entry->d_name;
    if (name == "." || name == "..") continue;
    if (entry->d_type == DT_REG || entry->d_type == DT_DIR || entry->d_type == DT_UNKNOWN) {
      ClearUnremovableFlags(fd, name.c_str());
    }
    if (entry->d_type == DT_DIR || entry->d_type == DT_UNKNOWN) names.push_back(name);
  }
  closedir(dir);
  return names;
}

// Gives the owner rwx on every folder of the tree (symlinks are not
// followed), so that one a program made unwritable (chmod 000 or 555 on a
// folder) can be removed by a user that is not root, and clears the
// unremovable flags of its files and folders (for root). Relative to one open
// folder at a time, going back up through "..": a tree may be deeper than
// PATH_MAX (a job can make one) and than the open files allowed.
void OpenUpFolders(const std::string& root) {
  struct stat st {};
  if (lstat(root.c_str(), &st) != 0) return;
  ClearUnremovableFlags(AT_FDCWD, root.c_str());
  if (!S_ISDIR(st.st_mode)) return;
  if ((st.st_mode & S_IRWXU) != S_IRWXU) chmod(root.c_str(), (st.st_mode & 07777) | S_IRWXU);
  int fd = open(root.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return;
  std::vector<std::vector<std::string>> todo = {Subfolders(fd)};  // per level, the folders left to visit
  while (fd >= 0 && !todo.empty()) {
    if (todo.back().empty()) {
      todo.pop_back();
      const int parent = todo.empty() ? -1 : openat(fd, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      close(fd);
      fd = parent;
      continue;
    }
    const std::string name = std::move(todo.back().back());
    todo.back().pop_back();
    if (fstatat(fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode)) continue;
    if ((st.st_mode & S_IRWXU) != S_IRWXU) fchmodat(fd, name.c_str(), (st.st_mode & 07777) | S_IRWXU, 0);
    const int child = openat(fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (child < 0) continue;
    close(fd);
    fd = child;
    todo.push_back(Subfolders(fd));
  }
  if (fd >= 0) close(fd);
}

}  // namespace

Status RemoveTree(const std::string& path) {
  std::error_code error;
  std::filesystem::remove_all(path, error);  // does not follow symlinks
  if (error == std::errc::permission_denied || error == std::errc::operation_not_permitted) {
    // An agent that is not root cannot remove a working folder whose job
    // locked a folder in it, and a root job's `chattr +i` on a shipped file
    // would fail every later checkout of its package on the node (the cache
    // could not unpack it again): open the tree up and remove it once more.
    OpenUpFolders(path);
    error.clear();
    std::filesystem::remove_all(path, error);
  }
  if (error) return Status::IOError(fmt::format("cannot remove {}: {}", path, error.message()));
  return Status::Ok();
}

std::string JoinPath(const std::string& base, const std::string& relative) {
  if (base.empty() || (!relative.empty() && relative[0] == '/')) return relative;
  if (relative.empty()) return base;
  return base.back() == '/' ? base + relative : base + "/" + relative;
}

std::string ExecutableDir() {
  char path[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0) return "";
  const std::string exe(path, static_cast<size_t>(n));
  return exe.substr(0, exe.rfind('/'));
}

std::string BaseName(const std::string& path) {
  std::string trimmed = path;
  while (trimmed.size() > 1 && trimmed.back() == '/') trimmed.pop_back();
  return trimmed.substr(trimmed.rfind('/') + 1);
}

}  // namespace clusterd
