// The file helpers every part uses: making folders, reading a small file,
// writing one atomically, removing a tree, joining paths. One place, so
// that modes and error messages are the same everywhere.
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "common/status.h"

namespace clusterd {

// Closes a descriptor on every path out.
class UniqueFd {
 public:
  explicit UniqueFd(int fd = -1) : fd_(fd) {}
  ~UniqueFd() { Reset(); }
  UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) {
      Reset();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  int get() const { return fd_; }
  bool ok() const { return fd_ >= 0; }
  // Hands the descriptor to a new owner (fdopendir).
  int Release() { return std::exchange(fd_, -1); }
  void Reset() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

// mkdir -p with `mode` for the folders it makes (existing ones are left as they are).
Status MakeDirs(const std::string& path, mode_t mode = 0755);

// Makes `path` (and missing parents) a folder for this user only, 0700, or
// checks that the existing one is: a real folder (not a symlink) owned by
// this user and writable by nobody else. Anything else is refused, naming
// why: whoever made a shared /tmp/clusterd first would own the head.
Status EnsurePrivateDir(const std::string& path);

// The whole file, read with read(2): never throws (std::ifstream read with
// an istreambuf_iterator throws std::ios_failure when read() fails, as it
// does for /proc/PID/... of a process that exited meanwhile, and that ended
// agents). IOError naming the file and why.
Result<std::string> ReadWholeFile(const std::string& path);

// The whole file, trailing newlines and spaces removed.
Result<std::string> ReadFileTrimmed(const std::string& path);

// Whether a file must still be whole after a power loss, or only to the
// readers of a running system: a running rank's pid record or its config
// means nothing after a reboot, and an fsync per rank is the launch path's
// largest wait on a busy disk (it waits for everyone's journal commit).
enum class Durability { kSurvivesPowerLoss, kWhileRunning };

// Writes to a temporary sibling with `mode`, fsyncs (unless kWhileRunning)
// and renames, so readers never see half a file.
Status WriteFileAtomic(const std::string& path, const std::string& content, int mode = 0644,
                       Durability durability = Durability::kSurvivesPowerLoss);

// Asks the kernel to start writing [offset, offset + length) of `fd` to
// disk now, without waiting: a download that does this as its bytes land
// finds little left for the fsync before its rename. Errors are left to
// that fsync, which reports them.
void StartWriteback(int fd, int64_t offset, int64_t length);

// All of `data` written at `offset`, or at the file's position when offset
// is negative (an O_APPEND file), through short writes and EINTR. IOError
// "cannot write PATH: why".
Status WriteAllAt(int fd, std::string_view data, int64_t offset, const std::string& path);

// Exactly n bytes read at `offset`. IOError naming PATH when reading fails
// or the file ends first (it is shorter than its reader was told).
Status ReadExactlyAt(int fd, char* out, size_t n, int64_t offset, const std::string& path);

// rm -rf, without following symlinks; a missing path is fine.
Status RemoveTree(const std::string& path);

// base/relative with one slash between; an absolute `relative` is returned as is.
std::string JoinPath(const std::string& base, const std::string& relative);

// The last name in a path: "a/b/c" and "a/b/c/" -> "c"; "c" -> "c".
std::string BaseName(const std::string& path);

// The folder of this process's own executable ("" when unknown): where an
// installed or built clusterd finds what ships beside it.
std::string ExecutableDir();

}  // namespace clusterd
