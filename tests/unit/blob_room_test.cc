// The store's room policy alone, on an index in memory: what goes first,
// when a write may start, and when evicting cannot help.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "daemon/store/blob_room.h"

using namespace clusterd;

namespace {

std::vector<std::string> Names(const std::vector<Eviction>& order) {
  std::vector<std::string> names;
  for (const Eviction& e : order) names.push_back((e.kind == Eviction::Kind::kOwner ? "owner:" : "") + e.name);
  return names;
}

}  // namespace

TEST_CASE("eviction takes stale unheld blobs, then soft owners by last use, then fresh unheld blobs", "[store][blob_room]") {
  BlobIndex index;
  index.Add("stale-new", 10, 200);
  index.Add("stale-old", 10, 100);
  index.Add("fresh", 10, 1000);
  index.Add("live", 10, 50);     // held by a hard owner: never listed
  index.Add("shared", 10, 50);   // held by a soft and a hard owner
  index.Add("outputs", 10, 50);  // held by soft owners only
  index.Pin("job-live", {"live", "shared"}, 50);
  index.Pin("job-new/outputs", {"outputs"}, 300);
  index.Pin("job-old/outputs", {"shared", "outputs"}, 400);
  index.MakeSoft("job-new/outputs", 700);
  index.MakeSoft("job-old/outputs", 600);
  CHECK(Names(EvictionOrder(index, /*fresh_since=*/500)) ==
        std::vector<std::string>{"stale-old", "stale-new", "owner:job-old/outputs", "owner:job-new/outputs", "fresh"});
}

TEST_CASE("making room evicts just enough and nothing when evicting cannot help", "[store][blob_room]") {
  BlobIndex index;
  index.Add("old", 40, 1);
  index.Add("newer", 40, 2);
  index.Add("live", 20, 3);
  index.Pin("job-1", {"live"}, 3);
  std::vector<std::string> evicted;
  const Evictor evictor{[&](const std::string& id, const char*) {
                          evicted.push_back(id);
                          index.Remove(id);
                        },
                        [&](const std::string& owner) { evicted.push_back("owner:" + owner); }};

  // 100 of 100 used, 10 reserved: 50 more need "old" and "newer" out.
  REQUIRE(MakeRoom(index, 10, 100, 50, /*fresh_since=*/1000, evictor).ok());
  CHECK(evicted == std::vector<std::string>{"old", "newer"});

  evicted.clear();
  index.Add("again", 60, 4);  // 80 used
  Status full = MakeRoom(index, 10, 100, 71, 1000, evictor);  // 20 live + 10 reserved + 71 > 100
  CHECK(full.code() == Status::Code::kResourceExhausted);
  CHECK(full.message().find("held by live jobs") != std::string::npos);
  CHECK(evicted.empty());
  CHECK(MakeRoom(index, 0, 0, 1 << 30, 1000, evictor).ok());  // no cap
}

TEST_CASE("an announced size is checked against the cap beside live jobs only", "[store][blob_room]") {
  BlobIndex index;
  index.Add("live", 60, 1);
  index.Add("loose", 30, 1);
  index.Pin("job-1", {"live"}, 1);
  CHECK(CheckAnnounced(index, 0, 100, 40, "an upload").ok());  // the loose blob could go
  Status too_big = CheckAnnounced(index, 0, 100, 41, "blob x");
  CHECK(too_big.code() == Status::Code::kResourceExhausted);
  CHECK(too_big.message().find("cannot take blob x") != std::string::npos);
  CHECK(CheckAnnounced(index, 0, 100, 101, "an upload").message().find("more than the head's whole store") !=
        std::string::npos);
  CHECK(CheckAnnounced(index, 0, 0, 1 << 30, "an upload").ok());
}

TEST_CASE("a write that must evict takes a quarter of what it wrote ahead, within its size and the spare room",
          "[store][blob_room]") {
  CHECK(RoomAhead(/*written=*/400, /*size=*/-1, /*end=*/500, /*spare=*/1000) == 100);
  CHECK(RoomAhead(400, /*size=*/520, 500, 1000) == 20);  // never past what it announced
  CHECK(RoomAhead(400, -1, 500, /*spare=*/30) == 30);
  CHECK(RoomAhead(400, -1, 500, /*spare=*/-5) == 0);
  CHECK(RoomAhead(int64_t{1} << 40, -1, 0, int64_t{1} << 40) == kRoomAheadBytes);
}
