// The head's store takes room as an upload's bytes arrive, never on its
// word: an announced size that never comes evicts nothing, a write that
// dies gives its room back, and arriving bytes evict about their own size,
// finished jobs' data the owner used longest ago first. Time is a FakeClock
// (the order of use), so nothing here sleeps.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/sha256.h"
#include "daemon/store/blob_store.h"

using namespace clusterd;
namespace fs = std::filesystem;

namespace {

constexpr int64_t kCap = 1000;

// A store of kCap bytes full of finished jobs' data: job-1 .. job-`jobs`
// each hold 200 bytes as a soft owner, job-1 the one used longest ago.
struct FullStore {
  fs::path dir;
  FakeClock clock;
  std::unique_ptr<BlobStore> store;
  std::vector<std::string> released;  // evicted owners, in order
  std::vector<std::string> ids;       // job-i's blob is ids[i-1]

  explicit FullStore(int jobs = 5) {
    char name[] = "/tmp/blob-store-room-test-XXXXXX";
    dir = mkdtemp(name);
    BlobStore::Options options;
    options.dir = dir.string();
    options.capacity_bytes = kCap;
    options.clock = &clock;
    store = std::move(*BlobStore::Open(options));
    store->set_on_released([this](const std::string& owner, const std::string&) { released.push_back(owner); });
    for (int i = 1; i <= jobs; ++i) {
      const std::string data(200, static_cast<char>('a' + i));
      REQUIRE(Put(data).ok());
      ids.push_back(Sha256Hex(data));
      const std::string owner = "job-" + std::to_string(i) + "/outputs";
      store->Pin(owner, ids.back());
      clock.AdvanceMillis(1000);
      store->MakeSoft(owner);
    }
    REQUIRE(store->usage().used_bytes == 200 * jobs);
  }
  ~FullStore() { fs::remove_all(dir); }

  Status Put(const std::string& data) {
    auto writer = store->Create(Sha256Hex(data), static_cast<int64_t>(data.size()));
    if (!writer.ok()) return writer.status();
    for (size_t at = 0; at < data.size(); at += 10) RETURN_IF_ERROR((*writer)->Append(data.substr(at, 10)));
    return (*writer)->Commit();
  }
  int Kept() const {
    int kept = 0;
    for (const std::string& id : ids) kept += store->Has(id) ? 1 : 0;
    return kept;
  }
  bool TmpEmpty() const { return fs::is_empty(dir / "tmp"); }
};

std::vector<std::string> Owners(std::initializer_list<int> jobs) {
  std::vector<std::string> owners;
  for (int job : jobs) owners.push_back("job-" + std::to_string(job) + "/outputs");
  return owners;
}

}  // namespace

TEST_CASE("an upload that announces the whole store and sends one byte evicts one byte's worth", "[store][store_room]") {
  FullStore full;
  const std::string huge = Sha256Hex("twenty gibibytes, promised");
  auto stalled = full.store->Create(huge, kCap);  // exactly the cap: allowed
  REQUIRE(stalled.ok());
  REQUIRE((*stalled)->Append("x").ok());  // the store is full: this byte needs room
  CHECK(full.released == Owners({1}));    // one owner's worth for one byte
  CHECK(full.Kept() == 4);
  CHECK(full.store->usage().reserved_bytes <= 1);

  // More than the cap, or than live jobs leave, is refused at once, still
  // evicting nothing.
  CHECK(full.store->Create(Sha256Hex("more"), kCap + 1).status().code() == Status::Code::kResourceExhausted);
  full.store->Pin("job-9/package", full.ids[4]);  // a live job holds 200
  Status refused = full.store->Create(Sha256Hex("more"), 900).status();
  CHECK(refused.code() == Status::Code::kResourceExhausted);
  CHECK(refused.message().find("held by live jobs") != std::string::npos);
  CHECK(full.released == Owners({1}));
}

TEST_CASE("an announced upload evicts nothing before its first byte and leaves room for a package beside it",
          "[store][store_room]") {
  FullStore full(3);  // 600 of 1000 held by finished jobs
  auto stalled = full.store->Create(Sha256Hex("promised"), kCap);
  REQUIRE(stalled.ok());
  REQUIRE((*stalled)->Append("x").ok());  // room for it without evicting
  CHECK(full.released.empty());
  CHECK(full.Kept() == 3);

  const std::string package(300, 'p');
  CHECK(full.Put(package).ok());  // 600 + 1 + 300 fit: nothing goes
  CHECK(full.store->Has(Sha256Hex(package)));
  CHECK(full.released.empty());
  CHECK(full.Kept() == 3);
}

TEST_CASE("a write that dies gives its room back having evicted nothing for bytes it never sent",
          "[store][store_room]") {
  FullStore full(3);
  {
    auto dying = full.store->Create(Sha256Hex("a large upload"), kCap);
    REQUIRE(dying.ok());
    for (int i = 0; i < 5; ++i) REQUIRE((*dying)->Append(std::string(10, 'd')).ok());
    CHECK(full.store->usage().reserved_bytes == 50);
    CHECK(full.released.empty());
  }  // the client went away: the writer is dropped without a commit
  CHECK(full.store->usage().reserved_bytes == 0);
  CHECK(full.TmpEmpty());
  CHECK(full.Kept() == 3);
  // The whole rest of the store is there for the next upload.
  CHECK(full.Put(std::string(400, 'n')).ok());
  CHECK(full.released.empty());
}

TEST_CASE("arriving bytes evict about their own size, the finished job used longest ago first", "[store][store_room]") {
  FullStore full;  // 1000 of 1000 held by five finished jobs
  auto writer = full.store->Create(Sha256Hex("partly sent"), kCap);
  REQUIRE(writer.ok());
  for (int i = 0; i < 15; ++i) REQUIRE((*writer)->Append(std::string(10, 'w')).ok());
  CHECK(full.released == Owners({1}));  // 150 bytes: one 200-byte owner
  for (int i = 0; i < 15; ++i) REQUIRE((*writer)->Append(std::string(10, 'w')).ok());
  CHECK(full.released == Owners({1, 2}));  // 300 bytes: two
  const auto usage = full.store->usage();
  CHECK(usage.used_bytes + usage.reserved_bytes <= kCap);
  CHECK(usage.reserved_bytes <= 300 + 300 / 4);
  writer.value().reset();

  // A whole upload: 500 bytes need 100 more than is free, and the oldest
  // job left goes, the rest stay.
  const std::string data(500, 'u');
  REQUIRE(full.Put(data).ok());
  CHECK(full.released == Owners({1, 2, 3}));
  CHECK(full.store->Has(Sha256Hex(data)));
  CHECK(full.Kept() == 2);
  CHECK(full.store->usage().reserved_bytes == 0);
}

TEST_CASE("two uploads competing for the last room: one is refused as its bytes arrive and the other is stored",
          "[store][store_room]") {
  FullStore full(3);
  full.store->Pin("job-9/package", full.ids[2]);  // a live job's 200 bytes, never evicted
  const std::string datas[2] = {std::string(600, 'A'), std::string(600, 'B')};
  std::unique_ptr<BlobStore::Writer> writers[2];
  for (int w = 0; w < 2; ++w) {
    auto writer = full.store->Create(Sha256Hex(datas[w]), 600);  // neither reserves by announcing
    REQUIRE(writer.ok());
    writers[w] = std::move(*writer);
  }
  size_t sent[2] = {0, 0};
  int refused = -1;
  while (refused < 0 && sent[0] < 600) {
    for (int w = 0; w < 2 && refused < 0; ++w) {
      Status appended = writers[w]->Append(datas[w].substr(sent[w], 50));
      if (appended.ok()) {
        sent[w] += 50;
      } else {
        CHECK(appended.code() == Status::Code::kResourceExhausted);
        CHECK(appended.message().find("store is full") != std::string::npos);
        refused = w;
      }
      const auto usage = full.store->usage();
      CHECK(usage.used_bytes + usage.reserved_bytes <= kCap);
    }
  }
  // 200 live + 1200 sent cannot fit in 1000: one of them loses.
  REQUIRE(refused >= 0);
  writers[refused].reset();  // the refused stream ends, and its room comes back
  const int winner = 1 - refused;
  for (; sent[winner] < 600; sent[winner] += 50) {
    REQUIRE(writers[winner]->Append(datas[winner].substr(sent[winner], 50)).ok());
  }
  REQUIRE(writers[winner]->Commit().ok());
  CHECK(full.store->Has(Sha256Hex(datas[winner])));
  CHECK_FALSE(full.store->Has(Sha256Hex(datas[refused])));
  CHECK(full.store->Has(full.ids[2]));  // the live job's blob stayed
  CHECK(full.released == Owners({1, 2}));
  CHECK(full.store->usage().reserved_bytes == 0);
  CHECK(full.store->usage().used_bytes == 800);
  CHECK(full.TmpEmpty());
}
