// A new leader in HA gives the nodes it restored a grace to register again
// (ha_node_return_ms) longer than node_timeout: its agents must first find
// it among the heads. A node heard since is held to node_timeout again.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "common/resources.h"
#include "daemon/head/node_table.h"

using namespace clusterd;

namespace {

constexpr Micros kTimeout = 2'000'000;
constexpr Micros kGrace = 15'000'000;

RegisterNode Node(const std::string& name) {
  RegisterNode r;
  r.set_name(name);
  r.set_name_given(true);
  r.set_address("127.0.0.1");
  r.set_instance_id(name + "-instance");
  (*r.mutable_total()->mutable_amounts())[kCpu] = 4;
  return r;
}

// What a previous head's table held: w1 and w2, both ALIVE.
std::vector<NodeRecord> PreviousHeadsNodes(FakeClock* clock) {
  NodeTable previous(clock, kTimeout);
  REQUIRE(previous.Register(Node("w1")).ok());
  REQUIRE(previous.Register(Node("w2")).ok());
  return previous.Records();
}

}  // namespace

TEST_CASE("restored nodes get the restored grace to come back, then die, and one back is held to node_timeout",
          "[node_table][liveness]") {
  FakeClock clock;
  const std::vector<NodeRecord> records = PreviousHeadsNodes(&clock);
  NodeTable table(&clock, kTimeout, kGrace);
  table.Restore(records);
  const Micros restored_at = clock.NowMicros();
  CHECK(table.NextDeadline() == restored_at + kGrace);

  // Long past node_timeout, within the grace: both still awaited.
  clock.Advance(kGrace - 1'000'000);
  CHECK(table.CheckTimeouts().empty());
  CHECK(table.Find("w1")->state() == ALIVE);
  CHECK(table.Find("w2")->state() == ALIVE);

  // w1's agent found the new leader; w2's never does.
  REQUIRE(table.Register(Node("w1")).ok());
  CHECK(table.NextDeadline() == restored_at + kGrace);
  clock.Advance(1'000'000);
  CHECK(table.CheckTimeouts().empty());  // exactly the grace: not yet
  clock.Advance(1);
  CHECK(table.CheckTimeouts() == std::vector<std::string>{table.Find("w2")->node_id()});
  CHECK(table.Find("w2")->state() == DEAD);
  CHECK(table.Find("w2")->state_reason() == "not back within 15000 ms of the head's restart");

  // w1, registered again, dies after node_timeout of silence, not the grace.
  CHECK(table.Find("w1")->state() == ALIVE);
  clock.Advance(kTimeout - 1'000'000);
  CHECK_FALSE(table.CheckTimeouts().empty());
  CHECK(table.Find("w1")->state() == DEAD);
}

TEST_CASE("without a restored grace (a single head's restart) restored nodes die after node_timeout",
          "[node_table][liveness]") {
  FakeClock clock;
  const std::vector<NodeRecord> records = PreviousHeadsNodes(&clock);
  NodeTable table(&clock, kTimeout);
  table.Restore(records);
  clock.Advance(kTimeout);
  CHECK(table.CheckTimeouts().empty());
  clock.Advance(1);
  CHECK(table.CheckTimeouts().size() == 2);
  CHECK(table.Find("w1")->state_reason() == "not back within 2000 ms of the head's restart");
}
