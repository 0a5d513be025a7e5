#include "daemon/head/state_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include <fmt/format.h>

namespace clusterd {

Result<int> LockStateFolder(const std::string& state_dir, std::chrono::milliseconds wait) {
  const std::string path = state_dir + "/lock";
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return Status::IOError(fmt::format("cannot open {}: {}", path, std::strerror(errno)));
  const auto deadline = std::chrono::steady_clock::now() + wait;
  while (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if ((errno != EWOULDBLOCK && errno != EINTR) || std::chrono::steady_clock::now() >= deadline) {
      close(fd);
      return Status::FailedPrecondition(fmt::format(
          "another clusterd head is running with its state in {} (see `clusterctl status`; `clusterd stop` "
          "stops it)", state_dir));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return fd;
}

}  // namespace clusterd
