// daemon/ha/leader_lease.h and leader_election.h's pure parts: a leader stops
// acting a margin before its lease could expire in etcd, counted on its own
// (here a hand-moved) clock from the send of the last acknowledged
// keepalive; the options and the leader key's value.
#include <catch2/catch.hpp>

#include "common/clock.h"
#include "daemon/ha/leader_election.h"
#include "daemon/ha/leader_lease.h"

using namespace clusterd;

TEST_CASE("leader lease: acting ends TTL minus the margin after the last acknowledged send", "[leader_lease]") {
  FakeClock clock;
  LeaderLease lease(/*step_down_margin_ms=*/500);
  CHECK_FALSE(lease.MayAct(clock.NowMicros()));

  const Micros granted_at = clock.NowMicros();
  clock.AdvanceMillis(300);  // the grant's answer came 300 ms after it was sent
  lease.Acknowledged(granted_at, /*ttl_s=*/2);
  CHECK(lease.ActUntil() == granted_at + 1'500'000);

  clock.AdvanceMillis(1199);  // 1499 ms after the send
  CHECK(lease.MayAct(clock.NowMicros()));
  clock.AdvanceMillis(1);  // 1500 ms: 500 ms before etcd could expire it
  CHECK_FALSE(lease.MayAct(clock.NowMicros()));

  // A keepalive sent now and acknowledged renews from its send.
  const Micros keepalive_sent = clock.NowMicros();
  clock.AdvanceMillis(50);
  lease.Acknowledged(keepalive_sent, 2);
  CHECK(lease.MayAct(clock.NowMicros()));
  CHECK(lease.ActUntil() == keepalive_sent + 1'500'000);

  // An answer to an older keepalive, arriving late, does not move it back.
  lease.Acknowledged(granted_at, 2);
  CHECK(lease.ActUntil() == keepalive_sent + 1'500'000);

  lease.Clear();
  CHECK_FALSE(lease.MayAct(clock.NowMicros()));
}

TEST_CASE("leader election options: a bad one is named", "[leader_lease]") {
  LeaderElectionOptions options;
  options.id = "head-1";
  options.address = "10.0.0.1:6379";
  CHECK(ValidateLeaderElectionOptions(options).ok());

  auto error = [&](LeaderElectionOptions changed) {
    Status status = ValidateLeaderElectionOptions(changed);
    REQUIRE_FALSE(status.ok());
    return status.message();
  };
  LeaderElectionOptions o = options;
  o.id.clear();
  CHECK_THAT(error(o), Catch::Contains("id is empty"));
  o = options;
  o.lease_ttl_ms = 0;
  CHECK_THAT(error(o), Catch::Contains("ha_lease_ttl_ms must be positive"));
  o = options;
  o.step_down_margin_ms = 2000;
  CHECK_THAT(error(o), Catch::Contains("ha_step_down_margin_ms must be at least 100 and less than the lease's TTL"));
  o = options;
  o.step_down_margin_ms = 50;
  CHECK_THAT(error(o), Catch::Contains("ha_step_down_margin_ms"));
  // 1500 ms is granted as 2 s by etcd: a margin of 1900 ms is still within it.
  o = options;
  o.lease_ttl_ms = 1500;
  o.step_down_margin_ms = 1900;
  CHECK(ValidateLeaderElectionOptions(o).ok());
}

TEST_CASE("leader keepalive deadline: a hung member leaves time to ask the next before the step-down", "[leader_lease]") {
  // 2 s TTL, 500 ms margin: a keepalive at 667 ms, the step-down at 1500 ms;
  // 416 ms on the first member leaves 417 for the next.
  CHECK(KeepaliveTimeoutMs(2, 500, 1000) == 416);
  CHECK(KeepaliveTimeoutMs(2, 500, 300) == 300);   // never past the client's own deadline
  CHECK(KeepaliveTimeoutMs(10, 500, 1000) == 1000);
  CHECK(KeepaliveTimeoutMs(1, 600, 1000) == 100);  // a window too short: 100 ms at least
}

TEST_CASE("leader key value: the head's id and address as JSON, anything else as an id", "[leader_lease]") {
  const std::string value = EncodeLeaderValue({"head-1", "10.0.0.1:6379"});
  const LeaderIdentity decoded = DecodeLeaderValue(value);
  CHECK(decoded.id == "head-1");
  CHECK(decoded.address == "10.0.0.1:6379");
  CHECK(DecodeLeaderValue("written by hand").id == "written by hand");
  CHECK(DecodeLeaderValue("written by hand").address.empty());
}
