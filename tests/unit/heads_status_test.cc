// What `clusterctl status` shows of the heads in HA: the JSON carries them
// as the status's ha_heads, exactly as HaHeads.ListHeads gave them; a
// single head's JSON has none.
#include <catch2/catch.hpp>

#include <optional>
#include <string>

#include "cli/heads_status.h"

using namespace clusterd;
using namespace clusterd::cli;

namespace {

ClusterStatus OneHeadStatus() {
  ClusterStatus status;
  status.set_head_address("10.0.0.1:6379");
  status.mutable_journal()->set_ok(true);
  return status;
}

HeadsReply TwoHeads() {
  HeadsReply heads;
  HeadEntry* a = heads.add_heads();
  a->set_id("head-a");
  a->set_address("10.0.0.1:6379");
  a->set_leading(true);
  a->set_started_unix_ms(1700000000000);
  HeadEntry* b = heads.add_heads();
  b->set_id("head-b");
  b->set_address("10.0.0.2:6379");
  b->set_started_unix_ms(1700000001000);
  heads.set_leader_id("head-a");
  heads.set_leader_address("10.0.0.1:6379");
  heads.set_leading_since_unix_ms(1700000002000);
  heads.set_lease_age_ms(300);
  heads.set_answered_by("head-a");
  return heads;
}

}  // namespace

TEST_CASE("clusterctl status --json carries the heads in HA, exactly as they were listed", "[cli][status][ha]") {
  const std::string expected =
      R"({"nodes":[],"pending":[],"head_address":"10.0.0.1:6379",)"
      R"("journal":{"ok":true,"failing_since_unix_ms":"0","reason":"","bytes":"0","snapshot_bytes":"0",)"
      R"("snapshots":"0","last_snapshot_unix_ms":"0"},)"
      R"("ha_heads":{"heads":[)"
      R"({"id":"head-a","address":"10.0.0.1:6379","leading":true,"started_unix_ms":"1700000000000"},)"
      R"({"id":"head-b","address":"10.0.0.2:6379","leading":false,"started_unix_ms":"1700000001000"}],)"
      R"("leader_id":"head-a","leader_address":"10.0.0.1:6379","leading_since_unix_ms":"1700000002000",)"
      R"("lease_age_ms":"300","answered_by":"head-a"}})";
  CHECK(StatusJson(OneHeadStatus(), TwoHeads()) == expected);
}

TEST_CASE("clusterctl status --json of a single head has no heads", "[cli][status][ha]") {
  const std::string json = StatusJson(OneHeadStatus(), std::nullopt);
  CHECK(json.find("ha_heads") == std::string::npos);
  CHECK(json.find("\"head_address\":\"10.0.0.1:6379\"") != std::string::npos);
}
