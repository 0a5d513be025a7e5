// Heartbeat datagrams on one machine, real daemons: the head's UDP port
// number taken by another program must not cost the datagrams, nor the head
// its start. (A firewall that drops them: machines_heartbeat_test.cc.)
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>

#include "harness.h"

using namespace clusterd;
using namespace clusterd::testing;
using namespace std::chrono_literals;

namespace {

std::string AllLogs(const Cluster& cluster) {
  return Run({"/bin/sh", "-c", "cat " + cluster.temp_dir() + "/session_latest/logs/*.log"}).out;
}

}  // namespace

TEST_CASE("the head's UDP port taken by another program: heartbeats go as datagrams to another", "[heartbeat]") {
  Cluster cluster;
  // Another program holds UDP on every address at the cluster's port.
  int squatter = socket(AF_INET, SOCK_DGRAM, 0);
  REQUIRE(squatter >= 0);
  sockaddr_in any{};
  any.sin_family = AF_INET;
  any.sin_port = htons(static_cast<uint16_t>(cluster.port()));
  any.sin_addr.s_addr = htonl(INADDR_ANY);
  REQUIRE(bind(squatter, reinterpret_cast<sockaddr*>(&any), sizeof any) == 0);

  RunResult head = cluster.StartHead({"--num-cpus", "0"});
  REQUIRE(head.exit_code == 0);
  REQUIRE(cluster.StartWorker("w1").exit_code == 0);
  REQUIRE(WaitFor([&] { return AllLogs(cluster).find("the head hears this node's heartbeat datagrams") !=
                               std::string::npos; },
                  10s, 100ms));
  const std::string logs = AllLogs(cluster);
  INFO(logs);
  // The banner says where they go instead (a firewall must let it
  // through), and so does the head's log.
  const std::string taken = "cannot bind UDP 127.0.0.1:" + std::to_string(cluster.port());
  INFO(head.out);
  CHECK(head.out.find("Heartbeats: as datagrams to UDP port ") != std::string::npos);
  CHECK(head.out.find(taken) != std::string::npos);
  CHECK(logs.find(taken) != std::string::npos);
  // Nothing reached the squatter: the agent was told the other port.
  char byte;
  CHECK(recv(squatter, &byte, 1, MSG_DONTWAIT) < 0);
  CHECK(cluster.StateOf("w1") == ALIVE);
  close(squatter);
}
