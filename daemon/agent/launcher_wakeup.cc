#include "daemon/agent/launcher_wakeup.h"

#include <fcntl.h>
#include <sys/stat.h>

namespace clusterd {

LauncherWakeup::LauncherWakeup(boost::asio::io_context& context, Launcher* launcher, ReadyFn on_ready)
    : context_(context), launcher_(launcher), on_ready_(std::move(on_ready)) {}

bool LauncherWakeup::IsWatched(int fd) const {
  struct stat st {};
  return watch_ && fd >= 0 && fstat(fd, &st) == 0 && st.st_ino == watched_inode_;
}

void LauncherWakeup::Follow() {
  const int fd = launcher_->ReadyFd();
  struct stat st {};
  if (fd < 0 || fstat(fd, &st) != 0) {
    watch_.reset();  // none now: the poll goes on, and a new one is watched from the next tick
    return;
  }
  if (watch_ && st.st_ino == watched_inode_) return;  // this very socket is watched
  // A dup, since the descriptor object closes what it holds; and a socket
  // the launcher client closed must stop waking the loop, which a new
  // inode number tells (fd numbers are reused).
  watch_.reset();
  const int copy = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (copy < 0) return;
  watch_.emplace(context_, copy);
  watched_inode_ = st.st_ino;
  Arm();
}

void LauncherWakeup::Arm() {
  watch_->async_wait(boost::asio::posix::stream_descriptor::wait_read, [this](const boost::system::error_code& error) {
    if (error || !on_ready_()) return;  // cancelled, or told to stop
    if (IsWatched(launcher_->ReadyFd())) {
      Arm();
      return;
    }
    watch_.reset();
    Follow();
  });
}

}  // namespace clusterd
