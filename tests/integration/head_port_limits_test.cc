// What the head's gRPC port gives a caller that has not shown the token
// (daemon/rpc/server_limits.h): a connection that never begins HTTP/2 is
// closed within seconds, not held for gRPC's two minutes, and the head
// raises its own limit on open files, so that idle connections do not run
// it out of descriptors (gRPC 1.51 never accepts again after that).
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>
#include <string>

#include "harness.h"
#include "http_get.h"
#include "test_skip.h"

using namespace clusterd;
using namespace clusterd::testing;
using namespace std::chrono_literals;

namespace {

// The soft limit on open files of `pid`, from /proc/PID/limits.
long OpenFileSoftLimit(pid_t pid) {
  std::ifstream limits("/proc/" + std::to_string(pid) + "/limits");
  std::string line;
  while (std::getline(limits, line)) {
    if (line.rfind("Max open files", 0) != 0) continue;
    std::istringstream fields(line.substr(std::string("Max open files").size()));
    long soft = -1;
    fields >> soft;
    return soft;
  }
  return -1;
}

}  // namespace

TEST_CASE("the head raises its open-file limit and closes a connection that never speaks HTTP/2 within seconds",
          "[hardening]") {
  rlimit inherited{};
  REQUIRE(getrlimit(RLIMIT_NOFILE, &inherited) == 0);
  if (inherited.rlim_max <= 1024) {
    SkipTest("the hard limit on open files is 1024 here: nothing to raise");
    return;
  }
  // Started from a shell whose soft limit is the usual 1024.
  rlimit lowered = inherited;
  lowered.rlim_cur = 1024;
  REQUIRE(setrlimit(RLIMIT_NOFILE, &lowered) == 0);
  Cluster cluster;
  const int started = cluster.StartHead({"--num-cpus", "0"}).exit_code;
  REQUIRE(setrlimit(RLIMIT_NOFILE, &inherited) == 0);
  REQUIRE(started == 0);
  const pid_t head = cluster.HeadPid();
  REQUIRE(head > 0);
  CHECK(OpenFileSoftLimit(head) == static_cast<long>(inherited.rlim_max));

  const int fd = ConnectLoopback(cluster.port());
  timeval wait{60, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
  const auto opened = std::chrono::steady_clock::now();
  char buffer[1024];
  while (read(fd, buffer, sizeof buffer) > 0) {
  }
  const int64_t held_ms = MillisSince(opened);
  close(fd);
  WARN("the head closed a silent connection after " << held_ms << " ms");
  REQUIRE(held_ms < 30'000);  // gRPC's own default is 120 s; ours is 10 s
  REQUIRE(cluster.Status().nodes_size() == 1);  // and it still answers
}
