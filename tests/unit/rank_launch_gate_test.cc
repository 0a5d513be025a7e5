// RankLaunchGate (daemon/agent/rank_launch_gate.h): launches told of and
// not yet started, held back while an earlier attempt is here, cancelled
// by a kill or a stop.
#include <catch2/catch.hpp>

#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "daemon/agent/rank_launch_gate.h"

using namespace clusterd;

namespace {

LaunchRanks Launch(const std::string& job_id, int attempt) {
  LaunchRanks launch;
  launch.set_job_id(job_id);
  launch.set_attempt(attempt);
  return launch;
}

bool NoneEarlier(const LaunchRanks&) { return false; }
bool AllEarlier(const LaunchRanks&) { return true; }

// What ReleaseDue handed over: (job, attempt, cancelled).
using Released = std::vector<std::tuple<std::string, int, bool>>;

Released ReleaseDue(RankLaunchGate* gate, const RankLaunchGate::EarlierAttemptHereFn& earlier) {
  Released released;
  gate->ReleaseDue(earlier, [&](const LaunchRanks& launch, bool cancelled) {
    released.emplace_back(launch.job_id(), launch.attempt(), cancelled);
  });
  return released;
}

}  // namespace

TEST_CASE("a launch whose code is ready starts, unless a kill cancelled it while its code was fetched",
          "[rank_launch_gate]") {
  RankLaunchGate gate;
  gate.Expect(Launch("a", 0));
  gate.Expect(Launch("b", 0));
  REQUIRE(gate.Holds("a", 0));
  gate.Cancel("b", 0);
  REQUIRE(gate.Prepared(Launch("a", 0), NoneEarlier) == RankLaunchGate::Ready::kStart);
  REQUIRE(gate.Prepared(Launch("b", 0), NoneEarlier) == RankLaunchGate::Ready::kCancelled);
  REQUIRE_FALSE(gate.Holds("a", 0));
  REQUIRE_FALSE(gate.Holds("b", 0));
  // Never expected (the code was at hand): it starts.
  REQUIRE(gate.Prepared(Launch("c", 0), NoneEarlier) == RankLaunchGate::Ready::kStart);
}

TEST_CASE("a launch waits while an earlier attempt is here and is released once it is gone, in order",
          "[rank_launch_gate]") {
  RankLaunchGate gate;
  gate.Expect(Launch("a", 1));
  REQUIRE(gate.Prepared(Launch("a", 1), AllEarlier) == RankLaunchGate::Ready::kWaits);
  REQUIRE(gate.Prepared(Launch("b", 2), AllEarlier) == RankLaunchGate::Ready::kWaits);
  REQUIRE(gate.Holds("a", 1));
  REQUIRE(gate.Holds("b", 2));
  REQUIRE_FALSE(gate.nothing_waiting());
  REQUIRE(ReleaseDue(&gate, AllEarlier).empty());
  // Only b's earlier attempt is gone.
  auto only_a_earlier = [](const LaunchRanks& launch) { return launch.job_id() == "a"; };
  REQUIRE(ReleaseDue(&gate, only_a_earlier) == Released{{"b", 2, false}});
  REQUIRE(ReleaseDue(&gate, NoneEarlier) == Released{{"a", 1, false}});
  REQUIRE(gate.nothing_waiting());
  REQUIRE_FALSE(gate.Holds("a", 1));
}

TEST_CASE("a kill or a stop cancels a waiting launch, which is released at once as cancelled",
          "[rank_launch_gate]") {
  RankLaunchGate gate;
  REQUIRE(gate.Prepared(Launch("a", 1), AllEarlier) == RankLaunchGate::Ready::kWaits);
  REQUIRE(gate.Prepared(Launch("b", 1), AllEarlier) == RankLaunchGate::Ready::kWaits);
  gate.Cancel("a", 1);
  REQUIRE(ReleaseDue(&gate, AllEarlier) == Released{{"a", 1, true}});
  gate.CancelAll();
  REQUIRE(ReleaseDue(&gate, AllEarlier) == Released{{"b", 1, true}});
  REQUIRE(gate.nothing_waiting());
}

TEST_CASE("a launch whose code failed is forgotten, and a cancel of an unknown attempt changes nothing",
          "[rank_launch_gate]") {
  RankLaunchGate gate;
  gate.Expect(Launch("a", 0));
  gate.Cancel("z", 3);
  gate.Failed(Launch("a", 0));
  REQUIRE_FALSE(gate.Holds("a", 0));
  REQUIRE(gate.Prepared(Launch("a", 0), NoneEarlier) == RankLaunchGate::Ready::kStart);
}
