// The Ceph fixture itself: radosgw answers S3 with the fixture's user, can
// be killed and restarted on its port, and nothing is left once it is gone.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include "ceph_fixture.h"
#include "harness.h"

namespace clusterd::testing {
namespace {

TEST_CASE("Ceph fixture serves S3 and leaves no process or folder behind", "[ceph][s3]") {
  std::vector<pid_t> pids;
  std::string dir;
  {
    REQUIRE_CEPH(ceph);
    pids = ceph->pids();
    dir = ceph->dir();
    REQUIRE(pids.size() == 3);  // monitor, OSD, gateway
    REQUIRE(ceph->CreateBucket("fixture-bucket"));
    REQUIRE_FALSE(ceph->CreateBucket("x"));  // too short a name: S3 refuses it, and we see that

    ceph->KillGateway();
    REQUIRE_FALSE(ceph->GatewayAlive());
    REQUIRE(ceph->RestartGateway());
    // The bucket survived: it lives in the OSD, not in the gateway.
    REQUIRE(ceph->CreateBucket("fixture-bucket"));
    pids = ceph->pids();
  }
  for (pid_t pid : pids) CHECK_FALSE(ProcessAlive(pid));
  struct stat st;
  CHECK(stat(dir.c_str(), &st) != 0);
}

}  // namespace
}  // namespace clusterd::testing
