// Descriptors held back so that a listener can always take a connection
// off its backlog. Once a process is out of descriptors, accept() fails
// and the connection stays queued: the listener is woken again at once,
// for ever, and the backlog stays full, so that even clients the head would
// serve time out. Holding a few descriptors on /dev/null and letting them go
// at that moment lets the listener accept what waits and close it, so that
// the backlog drains and the port keeps answering; they are taken back
// once there is room again (the trick libev and nginx use).
// Thread-compatible: one listener thread uses it.
#pragma once

#include <vector>

namespace clusterd {

class DescriptorReserve {
 public:
  explicit DescriptorReserve(int count);
  ~DescriptorReserve();
  DescriptorReserve(const DescriptorReserve&) = delete;
  DescriptorReserve& operator=(const DescriptorReserve&) = delete;

  // After accept() on listen_fd failed for want of descriptors (EMFILE or
  // ENFILE): frees the reserve, accepts and closes up to what it held,
  // and takes it back. Returns how many connections were shed.
  int Shed(int listen_fd);
  // Takes back what a failed refill left out; cheap when the reserve is full.
  void Refill();
  int held() const { return static_cast<int>(held_.size()); }

 private:
  int count_;
  std::vector<int> held_;
};

// Whether accept() failed because this process or the system is out of
// descriptors.
bool OutOfDescriptors(int error);

}  // namespace clusterd
