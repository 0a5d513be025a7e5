// The store's index alone: bytes counted once per blob, owners hard until
// made soft, and unwanted pieces that count as used longest ago.
#include <catch2/catch.hpp>

#include "daemon/store/blob_index.h"

using namespace clusterd;

TEST_CASE("the blob index counts each blob once and only hard owners' blobs as pinned", "[store][blob_index]") {
  BlobIndex index;
  index.Add("a", 10, 1);
  index.Add("b", 20, 1);
  index.Add("a", 15, 2);  // the same blob again: replaced, not added
  CHECK(index.used_bytes() == 35);
  CHECK(index.blobs().size() == 2);

  index.Pin("job-1", {"a", "b", "not-yet"}, 5);
  index.Pin("job-2", {"a"}, 6);
  CHECK(index.HardPinnedBytes() == 35);  // "a" held twice, counted once; "not-yet" absent
  CHECK(index.Find("b")->last_used == 5);  // pinning is a use
  CHECK(index.Holders("a") == std::vector<std::string>{"job-1", "job-2"});

  index.MakeSoft("job-1", 7);
  CHECK(index.HardPinnedBytes() == 15);  // job-2's "a" only
  CHECK(index.owners().at("job-1").last_used == 7);
  CHECK(index.IsHeld("b"));

  CHECK(index.DropOwner("job-1") == std::set<std::string>{"a", "b", "not-yet"});
  CHECK(index.DropOwner("job-1").empty());
  CHECK_FALSE(index.IsHeld("b"));
  index.Remove("b");
  CHECK_FALSE(index.Has("b"));
  CHECK(index.used_bytes() == 15);
}

TEST_CASE("the blob index marks only unheld blobs unwanted", "[store][blob_index]") {
  BlobIndex index;
  index.Add("held", 1, 9);
  index.Add("loose", 1, 9);
  index.Pin("job-1", {"held"}, 9);
  index.MarkUnwanted({"held", "loose", "absent"});
  CHECK(index.Find("held")->last_used == 9);
  CHECK(index.Find("loose")->last_used == 0);
  CHECK_FALSE(index.Has("absent"));
}
