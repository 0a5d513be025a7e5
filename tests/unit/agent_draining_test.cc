// The head's side of an agent that stops: once it says it drains, nothing
// more is placed on its node, status shows it DRAINING with why, and its
// stream's end is put down to the stop; a rank that ends meanwhile says so,
// and an infeasible job's reason follows the nodes that die.
#include <catch2/catch.hpp>

#include "head_harness.h"

using namespace clusterd;
using namespace clusterd::testing;

namespace {

AgentMessage Draining() {
  AgentMessage m;
  m.mutable_draining()->set_reason("clusterd stop");
  return m;
}

const NodeInfo& NodeNamed(const ClusterStatus& status, const std::string& name) {
  for (const NodeInfo& node : status.nodes()) {
    if (node.name() == name) return node;
  }
  FAIL("no node " << name);
  return status.nodes(0);
}

}  // namespace

TEST_CASE("a draining agent's node gets no new ranks and shows DRAINING with its reason", "[agent_draining]") {
  QuietLogs quiet;
  Harness h;
  h.AddNode("a", 4);
  h.AddNode("b", 4);
  h.From("a", Draining());
  ClusterStatus status = h.head->GetStatus();
  REQUIRE(NodeNamed(status, "a").state() == DRAINING);
  REQUIRE(NodeNamed(status, "a").state_reason().find("its node agent is stopping: clusterd stop") != std::string::npos);
  // Both halves of a two-rank job fit on a alone; they go to b instead.
  std::string job = h.Submit(2, 1, PACK);
  h.Advance(500);
  h.AnswerPort("b", 29500);
  h.Advance(500);
  REQUIRE(h.Launches("a").empty());
  REQUIRE(h.Launches("b").size() == 1);
  REQUIRE(h.Launches("b")[0].ranks_size() == 2);
  // A job only a could hold waits rather than going there.
  std::string big = h.Submit(1, 4, PACK);
  h.Exit("b", job, 1, 0, 0);
  h.Exit("b", job, 1, 1, 0);
  h.Advance(500);
  REQUIRE(h.Launches("a").empty());
  REQUIRE(h.Job(big).state() == PENDING);
}

TEST_CASE("the stream of a draining agent ends as a stop, not a crash", "[agent_draining]") {
  QuietLogs quiet;
  Harness h;
  h.AddNode("a", 4);
  h.From("a", Draining());
  h.head->OnAgentDisconnected(h.agents["a"].get(), "connection to the node agent lost");
  ClusterStatus status = h.head->GetStatus();
  const NodeInfo& a = NodeNamed(status, "a");
  REQUIRE(a.state() == DEAD);
  REQUIRE(a.state_reason().find("its node agent is stopping") != std::string::npos);
}

// A rank stopped because its agent is stopping must not read as the
// training code's own failure.
TEST_CASE("a rank that ends while its node drains says so in the attempt's reason", "[agent_draining]") {
  QuietLogs quiet;
  Harness h;
  h.AddNode("a", 4);
  std::string job = h.Submit(1, 1, PACK, /*max_failures=*/1);
  h.AnswerPort("a", 29500);
  h.From("a", Draining());
  h.Exit("a", job, 0, 0, 143);
  REQUIRE_THAT(h.Job(job).reason(),
               Catch::Contains("rank 0 exited with code 143 while its node was draining (its node agent is stopping: "
                               "clusterd stop) on node a (attempt 0)"));
}

// An infeasible job must not go on counting a node that has left.
TEST_CASE("an infeasible job's reason counts the nodes left after one dies", "[agent_draining]") {
  QuietLogs quiet;
  Harness h;
  h.AddNode("a", 2);
  h.AddNode("b", 2);
  std::string job = h.Submit(3, 2, SPREAD);
  REQUIRE(h.Job(job).state() == INFEASIBLE);
  const std::string before = h.Job(job).reason();
  h.head->OnAgentDisconnected(h.agents["b"].get(), "connection to the node agent lost");
  h.head->Tick();
  const std::string after = h.Job(job).reason();
  INFO(before << "\n" << after);
  REQUIRE(h.Job(job).state() == INFEASIBLE);
  REQUIRE(after != before);
  REQUIRE(after.find("1 schedulable node") != std::string::npos);
}
