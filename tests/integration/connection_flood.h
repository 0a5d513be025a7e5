// Connections that send nothing (or HTTP/2's preface and nothing), opened
// from many loopback addresses (127.0.0.0/8 is all this machine's), to
// flood a head's ports as strangers would: no token is needed to connect.
// Used by the flood tests and by bench/chaos.
#pragma once

#include <string>
#include <vector>

namespace clusterd::testing {

class ConnectionFlood {
 public:
  ConnectionFlood() = default;
  ~ConnectionFlood() { CloseAll(); }
  ConnectionFlood(const ConnectionFlood&) = delete;
  ConnectionFlood& operator=(const ConnectionFlood&) = delete;

  // Opens `per_source` connections to host:port from each of `sources`
  // addresses 127.0.0.(first_source ... first_source+sources-1), or from
  // this machine's own address when first_source is negative; when
  // `preface`, each then sends HTTP/2's client preface. Connections that do
  // not complete within a second are given up. Returns how many opened.
  int Open(const std::string& host, int port, int sources, int per_source, bool preface, int first_source = 2);
  // How many of the opened connections the far end has closed by now.
  int ClosedByPeer();
  void CloseAll();
  int open() const { return static_cast<int>(fds_.size()); }

 private:
  std::vector<int> fds_;
};

// Entries in /proc/PID/fd: the descriptors a process holds (-1 if unknown).
int OpenDescriptors(int pid);
// Resident memory of a process, in KiB (-1 if unknown).
long ResidentKiB(int pid);

}  // namespace clusterd::testing
