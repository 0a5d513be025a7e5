// What a node token may fetch from the head's store (identity/node_blob_access.h).
#include <catch2/catch.hpp>

#include "daemon/head/identity/node_blob_access.h"

using namespace clusterd;

TEST_CASE("a node token may fetch the blobs of the attempts launched on its nodes, while they run there",
          "[identity][store]") {
  NodeBlobAccess access;
  access.NodeRegistered("node-a", "nodetoken-0001");
  access.NodeRegistered("node-b", "nodetoken-0002");
  access.NodeRegistered("node-c", "");  // the cluster's token: not restricted here
  access.Launched("node-a", "job-0001", 1);
  access.Launched("node-b", "job-0002", 1);

  CHECK(access.MayFetch("nodetoken-0001", "aa", {"job-0001"}).ok());
  CHECK(access.MayFetch("nodetoken-0001", "aa", {"job-0009", "job-0001"}).ok());  // a blob two jobs hold
  const Status refused = access.MayFetch("nodetoken-0001", "bb", {"job-0002"});
  CHECK(refused.code() == Status::Code::kPermissionDenied);
  CHECK(refused.message() ==
        "node token nodetoken-0001 may fetch only the blobs of the jobs running on its nodes (their packages and "
        "checkpoints); blob bb is not one of them");
  CHECK(!access.MayFetch("nodetoken-0001", "cc", {}).ok());  // a blob no job holds
  CHECK(!access.MayFetch("nodetoken-0003", "aa", {"job-0001"}).ok());  // a token with no node

  SECTION("a rank of the attempt ended on the node: its fetches are done") {
    access.RanksEnded("node-a", "job-0001", 0);  // an older attempt's: changes nothing
    CHECK(access.MayFetch("nodetoken-0001", "aa", {"job-0001"}).ok());
    access.RanksEnded("node-a", "job-0001", 1);
    CHECK(!access.MayFetch("nodetoken-0001", "aa", {"job-0001"}).ok());
  }
  SECTION("the job's next attempt on another node takes the access with it") {
    access.Launched("node-b", "job-0001", 2);
    CHECK(!access.MayFetch("nodetoken-0001", "aa", {"job-0001"}).ok());
    CHECK(access.MayFetch("nodetoken-0002", "aa", {"job-0001"}).ok());
  }
  SECTION("a gang on two nodes of one token: each node's access holds until its own ranks end") {
    access.NodeRegistered("node-d", "nodetoken-0001");
    access.Launched("node-d", "job-0001", 1);
    access.RanksEnded("node-a", "job-0001", 1);
    CHECK(access.MayFetch("nodetoken-0001", "aa", {"job-0001"}).ok());
    access.RanksEnded("node-d", "job-0001", 1);
    CHECK(!access.MayFetch("nodetoken-0001", "aa", {"job-0001"}).ok());
  }
  SECTION("a node that registers again with another token leaves the old token's nodes") {
    access.NodeRegistered("node-a", "nodetoken-0002");
    CHECK(!access.MayFetch("nodetoken-0001", "aa", {"job-0001"}).ok());
    CHECK(access.MayFetch("nodetoken-0002", "aa", {"job-0001"}).ok());
  }
}
