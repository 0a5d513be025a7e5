// RankLeftovers (daemon/agent/rank_leftovers.h): what an ended attempt's
// ranks left outside their groups is killed at its stop's grace's end, and
// at once where nothing of any rank is alive.
#include <catch2/catch.hpp>

#include <string>
#include <utility>
#include <vector>

#include "daemon/agent/rank_leftovers.h"
#include "fake_launcher.h"

using namespace clusterd;
using clusterd::testing::FakeLauncher;

TEST_CASE("leftovers are killed at the end of their grace, and the next deadline is told", "[rank_leftovers]") {
  FakeLauncher launcher;
  RankLeftovers leftovers(&launcher);
  leftovers.Add("a", 0, 5'000'000);
  leftovers.Add("b", 2, 3'000'000);
  leftovers.Add("c", 1, 0);  // no stop: at once
  REQUIRE(leftovers.KillDue(1'000'000) == 3'000'000);
  REQUIRE(launcher.leftovers_killed == std::vector<std::pair<std::string, int>>{{"c", 1}});
  REQUIRE(leftovers.Holds("a", 0));
  REQUIRE(leftovers.HoldsEarlier("b", 3));
  REQUIRE_FALSE(leftovers.HoldsEarlier("b", 2));
  REQUIRE(leftovers.KillDue(3'000'000) == 5'000'000);  // b's grace is not over until after 3 s
  REQUIRE(leftovers.KillDue(3'000'001) == 5'000'000);
  REQUIRE(launcher.leftovers_killed.back() == std::make_pair(std::string("b"), 2));
  REQUIRE(leftovers.KillDue(5'000'001) == 0);
  REQUIRE(launcher.leftovers_killed.back() == std::make_pair(std::string("a"), 0));
  REQUIRE(leftovers.empty());
}

TEST_CASE("no grace is owed where nothing any rank left is alive", "[rank_leftovers]") {
  FakeLauncher launcher;
  launcher.may_have_leftovers = false;
  RankLeftovers leftovers(&launcher);
  leftovers.Add("a", 0, 5'000'000);
  REQUIRE(leftovers.KillDue(1'000'000) == 0);
  REQUIRE(leftovers.empty());
  REQUIRE(launcher.leftovers_killed.empty());  // nothing to kill: not asked
  REQUIRE_FALSE(leftovers.Holds("a", 0));
}
