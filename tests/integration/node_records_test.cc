// The head's node table outlives the head (daemon/head/node_journal.h):
// after a restart each machine has the id it had, a drained one is still
// drained, and one that died is still listed.
#include <signal.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <map>
#include <string>

#include "harness.h"

using namespace clusterd;
using namespace clusterd::testing;
using namespace std::chrono_literals;

namespace {

std::map<std::string, std::string> IdsByName(Cluster& cluster) {
  std::map<std::string, std::string> ids;
  const ClusterStatus status = cluster.Status();  // kept: a range-for over a temporary's member dangles
  for (const NodeInfo& node : status.nodes()) ids[node.name()] = node.node_id();
  return ids;
}

const NodeInfo* Named(const ClusterStatus& status, const std::string& name) {
  for (const NodeInfo& node : status.nodes()) {
    if (node.name() == name) return &node;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("a restarted head keeps each node's id and drain and still lists the node that died", "[journal][nodes]") {
  const std::vector<std::string> head_flags = {"--num-cpus", "0", "--num-gpus", "0", "--heartbeat-ms", "200",
                                               "--node-timeout-ms", "1000"};
  Cluster cluster;
  REQUIRE(cluster.StartHead(head_flags).exit_code == 0);
  for (const char* name : {"w1", "w2"}) {
    RunResult started = cluster.StartWorker(name, {"--num-cpus", "1", "--num-gpus", "0", "--heartbeat-ms", "200"});
    INFO(started.err);
    REQUIRE(started.exit_code == 0);
  }
  const std::map<std::string, std::string> before = IdsByName(cluster);
  REQUIRE(before.size() == 2);  // the head, with no resources, runs no node of its own

  // w1 leaves for good; w2, registered after it, is drained.
  kill(cluster.WorkerPid("w1"), SIGTERM);
  REQUIRE(WaitFor([&] { return cluster.StateOf("w1") == DEAD; }, 15s));
  RunResult drained = cluster.Ctl({"drain", "w2"});
  INFO(drained.err);
  REQUIRE(drained.exit_code == 0);

  const pid_t head = cluster.HeadPid();
  REQUIRE(head > 0);
  kill(head, SIGKILL);
  REQUIRE(WaitFor([&] { return !ProcessAlive(head); }, 10s));
  REQUIRE(cluster.StartHead(head_flags).exit_code == 0);

  // w2's agent registers again by itself: same id (w1, before it, does not
  // come back), still drained, so a job that needs its CPU waits.
  REQUIRE(WaitFor([&] {
    const ClusterStatus status = cluster.Status();
    const NodeInfo* w2 = Named(status, "w2");
    return w2 && w2->incarnation() >= 2 && w2->state() == DRAINING;
  }, 15s));
  const ClusterStatus after = cluster.Status();
  INFO(cluster.Ctl({"status"}).out);
  REQUIRE(IdsByName(cluster) == before);
  REQUIRE(Named(after, "w2")->state_reason().find("still draining") != std::string::npos);
  REQUIRE(Named(after, "w1")->state() == DEAD);
  REQUIRE(cluster.Ctl({"drain", "w1"}).exit_code != 0);  // a dead node is not drained
}
