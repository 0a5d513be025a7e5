#include "daemon/rpc/descriptor_reserve.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

namespace clusterd {

DescriptorReserve::DescriptorReserve(int count) : count_(count) { Refill(); }

DescriptorReserve::~DescriptorReserve() {
  for (int fd : held_) close(fd);
}

void DescriptorReserve::Refill() {
  while (static_cast<int>(held_.size()) < count_) {
    int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    held_.push_back(fd);
  }
}

int DescriptorReserve::Shed(int listen_fd) {
  const int freed = static_cast<int>(held_.size());
  for (int fd : held_) close(fd);
  held_.clear();
  int shed = 0;
  for (int i = 0; i < freed; ++i) {
    int fd = accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) break;
    close(fd);
    ++shed;
  }
  Refill();
  return shed;
}

bool OutOfDescriptors(int error) { return error == EMFILE || error == ENFILE; }

}  // namespace clusterd
