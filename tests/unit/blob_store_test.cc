// The head's blob store on a real temporary folder: content checked on the
// way in, least-recently-used eviction that spares pinned blobs, a cap that
// refuses what cannot fit, and a reopen that keeps what was committed.
// Time is a FakeClock (the order of use), so nothing here sleeps.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <tuple>
#include <vector>

#include "common/clock.h"
#include "common/sha256.h"
#include "daemon/store/blob_store.h"

#include "temp_dir.h"

using namespace clusterd;
namespace fs = std::filesystem;

namespace {

using clusterd::testing::TempDir;

std::unique_ptr<BlobStore> OpenStore(const TempDir& dir, int64_t cap, const Clock& clock) {
  auto store = BlobStore::Open({dir.path.string(), cap, &clock});
  REQUIRE(store.ok());
  return std::move(*store);
}

// A store of 100 bytes on a fake clock, in a folder of its own, that
// records the owners whose data it lets go, in order.
struct ReleasingStore {
  TempDir dir{"blob-store-test"};
  FakeClock clock;
  std::unique_ptr<BlobStore> store = OpenStore(dir, 100, clock);
  std::vector<std::string> released;

  ReleasingStore() {
    store->set_on_released([this](const std::string& owner, const std::string&) { released.push_back(owner); });
  }
};

// The file of blob `id` in the store's folder ("" when there is none).
fs::path FileOfBlob(const TempDir& dir, const std::string& id) {
  for (const auto& entry : fs::recursive_directory_iterator(dir.path)) {
    if (entry.path().filename() == id) return entry.path();
  }
  return {};
}

// Puts `data` in pieces; returns the commit's status.
Status Put(BlobStore& store, const std::string& data) {
  auto writer = store.Create(Sha256Hex(data), static_cast<int64_t>(data.size()));
  if (!writer.ok()) return writer.status();
  for (size_t at = 0; at < data.size(); at += 7) {
    Status appended = (*writer)->Append(data.substr(at, 7));
    if (!appended.ok()) return appended;
  }
  return (*writer)->Commit();
}

std::string ReadAll(int fd) {
  std::string out;
  char buffer[256];
  ssize_t n;
  while ((n = read(fd, buffer, sizeof buffer)) > 0) out.append(buffer, static_cast<size_t>(n));
  close(fd);
  return out;
}

}  // namespace

TEST_CASE("a blob is visible only once its bytes hash to its id", "[store]") {
  TempDir dir{"blob-store-test"};
  FakeClock clock;
  auto store = OpenStore(dir, 0, clock);
  const std::string data = "the bytes of a code package";
  const std::string id = Sha256Hex(data);
  REQUIRE_FALSE(store->Has(id));
  REQUIRE(Put(*store, data).ok());
  REQUIRE(store->Has(id));
  REQUIRE(*store->Size(id) == static_cast<int64_t>(data.size()));
  auto fd = store->OpenForRead(id);
  REQUIRE(fd.ok());
  REQUIRE(ReadAll(*fd) == data);
  REQUIRE(store->Create(id, 3).status().code() == Status::Code::kAlreadyExists);

  // Bytes that do not match the announced id are thrown away.
  std::string other = Sha256Hex("something else");
  auto writer = store->Create(other, 4);
  REQUIRE(writer.ok());
  REQUIRE((*writer)->Append("evil").ok());
  Status committed = (*writer)->Commit();
  REQUIRE(committed.code() == Status::Code::kCorruption);
  REQUIRE(committed.message().find("hash to " + Sha256Hex("evil")) != std::string::npos);
  REQUIRE_FALSE(store->Has(other));

  // Too few or too many bytes, and ids that are not ids.
  writer = store->Create(other, 100);
  REQUIRE((*writer)->Append("short").ok());
  REQUIRE((*writer)->Commit().code() == Status::Code::kInvalidArgument);
  writer = store->Create(other, 2);
  REQUIRE((*writer)->Append("long").code() == Status::Code::kInvalidArgument);
  for (const std::string& bad : std::vector<std::string>{"../../etc/passwd", "ABC", std::string(64, 'g'), std::string(64, 'A')}) {
    REQUIRE(store->Create(bad, 1).status().code() == Status::Code::kInvalidArgument);
    REQUIRE(store->OpenForRead(bad).status().code() == Status::Code::kInvalidArgument);
  }
  // An abandoned write leaves no temporary behind.
  writer.value().reset();
  REQUIRE(fs::is_empty(dir.path / "tmp"));
  REQUIRE(store->usage().used_bytes == static_cast<int64_t>(data.size()));
}

TEST_CASE("the cap evicts least recently used blobs, never pinned ones", "[store]") {
  TempDir dir{"blob-store-test"};
  FakeClock clock;
  auto store = OpenStore(dir, 100, clock);
  const std::string a(40, 'a'), b(40, 'b'), c(40, 'c');
  REQUIRE(Put(*store, a).ok());
  clock.AdvanceMillis(1000);
  REQUIRE(Put(*store, b).ok());
  clock.AdvanceMillis(1000);
  close(*store->OpenForRead(Sha256Hex(a)));  // a is now the most recently used
  REQUIRE(Put(*store, c).ok());               // b goes
  REQUIRE(store->Has(Sha256Hex(a)));
  REQUIRE_FALSE(store->Has(Sha256Hex(b)));
  REQUIRE(store->Has(Sha256Hex(c)));

  store->Pin("job-1", Sha256Hex(a));
  store->Pin("job-2", Sha256Hex(c));
  Status full = Put(*store, b);
  REQUIRE(full.code() == Status::Code::kResourceExhausted);
  REQUIRE(full.message().find("held by live jobs") != std::string::npos);
  REQUIRE(store->usage().pinned_bytes == 80);

  store->UnpinAll("job-1");
  REQUIRE(Put(*store, b).ok());  // a goes, c stays pinned
  REQUIRE_FALSE(store->Has(Sha256Hex(a)));
  REQUIRE(store->Has(Sha256Hex(c)));
  REQUIRE(Put(*store, std::string(101, 'x')).code() == Status::Code::kResourceExhausted);
}

TEST_CASE("a reopened store keeps committed blobs and drops unfinished writes", "[store]") {
  TempDir dir{"blob-store-test"};
  FakeClock clock;
  const std::string data = "kept across a restart";
  {
    auto store = OpenStore(dir, 0, clock);
    REQUIRE(Put(*store, data).ok());
    auto unfinished = store->Create(Sha256Hex("half"), 4);
    REQUIRE(unfinished.ok());
    REQUIRE((*unfinished)->Append("ha").ok());
    unfinished.value().release();  // the head died mid-upload: its temporary stays on disk
  }
  REQUIRE_FALSE(fs::is_empty(dir.path / "tmp"));
  auto store = OpenStore(dir, 0, clock);
  REQUIRE(store->Has(Sha256Hex(data)));
  REQUIRE_FALSE(store->Has(Sha256Hex("half")));
  REQUIRE(fs::is_empty(dir.path / "tmp"));
  REQUIRE(store->usage().blobs == 1);
}

TEST_CASE_METHOD(ReleasingStore,
                 "finished jobs' data (soft owners) goes when room is needed, the owner used longest ago first",
                 "[store]") {
  const std::string shared(30, 's'), old_only(30, 'o'), new_only(30, 'n');
  for (const auto* data : {&shared, &old_only, &new_only}) REQUIRE(Put(*store, *data).ok());
  store->Pin("job-1/outputs", {Sha256Hex(shared), Sha256Hex(old_only)});
  clock.AdvanceMillis(1000);
  store->Pin("job-2/outputs", {Sha256Hex(new_only)});
  store->Pin("job-3/package", Sha256Hex(shared));  // a live job holds the shared piece too
  store->MakeSoft("job-1/outputs");
  clock.AdvanceMillis(1000);
  store->MakeSoft("job-2/outputs");

  REQUIRE(Put(*store, std::string(30, 'x')).ok());  // needs 20 more: job-1 goes, job-2 stays
  REQUIRE(released == std::vector<std::string>{"job-1/outputs"});
  REQUIRE_FALSE(store->Has(Sha256Hex(old_only)));
  REQUIRE(store->Has(Sha256Hex(shared)));  // still held by the live job
  REQUIRE(store->Has(Sha256Hex(new_only)));

  // Releasing by hand (clusterctl delete) deletes what only that owner held.
  store->Release("job-2/outputs");
  REQUIRE_FALSE(store->Has(Sha256Hex(new_only)));
  REQUIRE(released.size() == 1);  // not an eviction: nobody is told
  // Hard owners are never evicted.
  Status full = Put(*store, std::string(80, 'y'));
  REQUIRE(full.code() == Status::Code::kResourceExhausted);
  REQUIRE(store->Has(Sha256Hex(shared)));
}

TEST_CASE("a write named at its end is checked at its commit and makes room as bytes arrive", "[store]") {
  TempDir dir{"blob-store-test"};
  FakeClock clock;
  auto store = OpenStore(dir, 100, clock);
  const std::string data(60, 'u');
  auto writer = store->CreateUnnamed(10);  // the hint is low: room grows with the bytes
  REQUIRE(writer.ok());
  REQUIRE((*writer)->Append(data.substr(0, 25)).ok());
  REQUIRE((*writer)->Append(data.substr(25)).ok());
  REQUIRE((*writer)->Commit().code() == Status::Code::kFailedPrecondition);  // it needs its id
  REQUIRE((*writer)->Commit(Sha256Hex(data), 60).ok());
  REQUIRE(store->Has(Sha256Hex(data)));
  REQUIRE(store->usage().used_bytes == 60);

  // A wrong id, a wrong size or a bad id: nothing is kept.
  const std::string other(10, 'o');
  for (auto [id, size, code] : std::vector<std::tuple<std::string, int64_t, Status::Code>>{
           {Sha256Hex("not these bytes"), 10, Status::Code::kCorruption},
           {Sha256Hex(other), 11, Status::Code::kInvalidArgument},
           {"ABC", 10, Status::Code::kInvalidArgument}}) {
    writer = store->CreateUnnamed(0);
    REQUIRE((*writer)->Append(other).ok());
    REQUIRE((*writer)->Commit(id, size).code() == code);
    REQUIRE_FALSE(store->Has(Sha256Hex(other)));
  }
  REQUIRE(fs::is_empty(dir.path / "tmp"));

  // Past the cap with the rest pinned: refused as the bytes arrive.
  store->Pin("job-1", Sha256Hex(data));
  writer = store->CreateUnnamed(0);
  REQUIRE((*writer)->Append(std::string(30, 'a')).ok());
  Status full = (*writer)->Append(std::string(20, 'b'));
  REQUIRE(full.code() == Status::Code::kResourceExhausted);
  writer.value().reset();
  REQUIRE(fs::is_empty(dir.path / "tmp"));
  REQUIRE(store->CreateUnnamed(41).status().code() == Status::Code::kResourceExhausted);
  REQUIRE(store->CreateUnnamed(40).ok());  // room freed by the abandoned write
}

// A tree's pieces are held by nobody until its manifest is pinned: an
// upload into a full store must not evict its own first pieces before an
// older finished job's outputs.
TEST_CASE("blobs nobody used for a while go first then finished jobs' data and an upload's fresh pieces last", "[store]") {
  TempDir dir{"blob-store-test"};
  FakeClock clock;
  const std::string stale(30, 's'), finished(30, 'f'), piece1(30, '1'), piece2(30, '2'), piece3(30, '3'),
      piece4(30, '4');
  {
    auto store = OpenStore(dir, 100, clock);
    REQUIRE(Put(*store, stale).ok());
    REQUIRE(Put(*store, finished).ok());
  }
  // Last used two hours ago, as a reopened store reads it from the file.
  const std::string stale_id = Sha256Hex(stale);
  const fs::path stale_file = dir.path / "blobs" / stale_id.substr(0, 2) / stale_id;
  REQUIRE(fs::exists(stale_file));
  const int64_t two_hours_ago_ns = (clock.UnixMillis() - 2 * 3600 * 1000) * 1'000'000;
  const struct timespec times[2] = {{0, UTIME_OMIT}, {two_hours_ago_ns / 1'000'000'000, two_hours_ago_ns % 1'000'000'000}};
  REQUIRE(utimensat(AT_FDCWD, stale_file.c_str(), times, 0) == 0);
  auto store = OpenStore(dir, 100, clock);
  std::vector<std::string> released;
  store->set_on_released([&](const std::string& owner, const std::string&) { released.push_back(owner); });
  store->Pin("job-1/outputs", Sha256Hex(finished));
  store->MakeSoft("job-1/outputs");

  REQUIRE(Put(*store, piece1).ok());  // 90 of 100
  REQUIRE(Put(*store, piece2).ok());  // the stale blob goes
  REQUIRE_FALSE(store->Has(stale_id));
  REQUIRE(released.empty());
  clock.AdvanceMillis(1000);
  REQUIRE(Put(*store, piece3).ok());  // then the finished job's outputs, not the pieces
  REQUIRE(released == std::vector<std::string>{"job-1/outputs"});
  REQUIRE_FALSE(store->Has(Sha256Hex(finished)));
  for (const auto* piece : {&piece1, &piece2, &piece3}) REQUIRE(store->Has(Sha256Hex(*piece)));

  // An uploader asking what is missing uses what is there: piece1 is now
  // the newest, and piece2 the fresh piece used longest ago.
  clock.AdvanceMillis(1000);
  const std::string unknown = Sha256Hex("not stored");
  REQUIRE(store->Missing({Sha256Hex(piece1), unknown}) == std::vector<std::string>{unknown});
  REQUIRE(Put(*store, piece4).ok());
  REQUIRE(store->Has(Sha256Hex(piece1)));
  REQUIRE_FALSE(store->Has(Sha256Hex(piece2)));
}

// The pieces of an output larger than the store will never be kept: they
// must not count as fresh for the upload grace and push out finished jobs'
// data.
TEST_CASE_METHOD(ReleasingStore, "the pieces of a tree that will not be kept go before finished jobs' data",
                 "[store]") {
  const std::string finished(30, 'f'), piece1(30, '1'), piece2(30, '2'), next(30, 'n');
  REQUIRE(Put(*store, finished).ok());
  store->Pin("job-1/outputs", Sha256Hex(finished));
  store->MakeSoft("job-1/outputs");
  REQUIRE(Put(*store, piece1).ok());
  REQUIRE(Put(*store, piece2).ok());
  store->MarkUnwanted({Sha256Hex(piece1), Sha256Hex(piece2), Sha256Hex(finished)});  // a held one stays as it is
  REQUIRE(Put(*store, next).ok());  // 20 more needed: an unwanted piece goes
  REQUIRE(released.empty());
  REQUIRE(store->Has(Sha256Hex(finished)));
  REQUIRE(store->Has(Sha256Hex(piece1)) != store->Has(Sha256Hex(piece2)));
}

TEST_CASE("an unheld blob unused for longer than store_upload_grace_s goes before finished jobs' data", "[store]") {
  TempDir dir{"blob-store-test"};
  FakeClock clock;
  BlobStore::Options options{dir.path.string(), 100, &clock};
  options.upload_grace_s = 60;
  auto opened = BlobStore::Open(options);
  REQUIRE(opened.ok());
  BlobStore& store = **opened;
  std::vector<std::string> released;
  store.set_on_released([&](const std::string& owner, const std::string&) { released.push_back(owner); });
  const std::string finished(30, 'f'), loose(30, 'l'), next(30, 'n'), last(30, 'z');
  REQUIRE(Put(store, finished).ok());
  store.Pin("job-1/outputs", Sha256Hex(finished));
  store.MakeSoft("job-1/outputs");
  REQUIRE(Put(store, loose).ok());
  clock.AdvanceMillis(61'000);  // past this store's grace, well within the default half hour
  REQUIRE(Put(store, next).ok());  // 90 of 100
  REQUIRE(Put(store, last).ok());  // 20 more needed: the loose blob is stale, so it goes first
  CHECK(released.empty());
  CHECK(store.Has(Sha256Hex(finished)));
  CHECK_FALSE(store.Has(Sha256Hex(loose)));
}

// A package gone bad on the head's disk, if kept, would fail every node's
// launch, and every later submit of the same folder, for ever.
TEST_CASE("a blob whose bytes no longer hash to its id is dropped when checked though held and its holders are told",
          "[store]") {
  TempDir dir{"blob-store-test"};
  FakeClock clock;
  auto store = OpenStore(dir, 0, clock);
  const std::string good = "intact bytes", bad = "bytes that will rot";
  REQUIRE(Put(*store, good).ok());
  REQUIRE(Put(*store, bad).ok());
  store->Pin("job-1", {Sha256Hex(good), Sha256Hex(bad)});
  store->Pin("job-2", {Sha256Hex(good)});
  std::vector<std::pair<std::string, std::string>> released;
  store->set_on_released([&](const std::string& owner, const std::string& why) { released.push_back({owner, why}); });
  REQUIRE(store->DropIfCorrupt(Sha256Hex(good)).ok());
  CHECK_FALSE(*store->DropIfCorrupt(Sha256Hex(good)));
  CHECK(store->Has(Sha256Hex(good)));

  fs::path file;
  for (const auto& entry : fs::recursive_directory_iterator(dir.path)) {
    if (entry.is_regular_file() && entry.path().filename().string().find(Sha256Hex(bad)) != std::string::npos) {
      file = entry.path();
    }
  }
  REQUIRE_FALSE(file.empty());
  {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(3);
    f.put('X');
  }
  auto dropped = store->DropIfCorrupt(Sha256Hex(bad));
  REQUIRE(dropped.ok());
  CHECK(*dropped);
  CHECK_FALSE(store->Has(Sha256Hex(bad)));
  CHECK_FALSE(fs::exists(file));
  // What held it is lost whole, and said so: job-1 lets go of its good
  // piece too, which job-2 still holds.
  REQUIRE(released.size() == 1);
  CHECK(released[0].first == "job-1");
  CHECK(released[0].second.rfind("its bytes went bad on the head's disk (they hash to ", 0) == 0);
  CHECK(store->Has(Sha256Hex(good)));
  CHECK(store->usage().used_bytes == static_cast<int64_t>(good.size()));
  // The right bytes are taken again, and an id it lacks is no error.
  REQUIRE(Put(*store, bad).ok());
  CHECK(store->Has(Sha256Hex(bad)));
  CHECK_FALSE(*store->DropIfCorrupt(Sha256Hex("never stored")));
}

TEST_CASE("a blob whose file is gone is dropped when it is opened and its bytes are taken again", "[store]") {
  TempDir dir{"blob-store-test"};
  FakeClock clock;
  auto store = OpenStore(dir, 0, clock);
  const std::string gone = "bytes whose file goes";
  REQUIRE(Put(*store, gone).ok());
  store->Pin("job-1", {Sha256Hex(gone)});
  fs::remove(FileOfBlob(dir, Sha256Hex(gone)));
  auto opened = store->OpenForRead(Sha256Hex(gone));
  REQUIRE_FALSE(opened.ok());
  CHECK(opened.status().code() == Status::Code::kNotFound);
  CHECK(opened.status().message() ==
        "no blob " + Sha256Hex(gone) + " in the head's store (its file was gone, and is dropped)");
  CHECK_FALSE(store->Has(Sha256Hex(gone)));
  CHECK(store->usage().used_bytes == 0);
  REQUIRE(Put(*store, gone).ok());
  auto again = store->OpenForRead(Sha256Hex(gone));
  REQUIRE(again.ok());
  close(*again);
}

// A directory standing at a blob's path is cleared too: else the blob
// stays listed, and later uploads of its bytes are skipped, then cannot be
// moved into place.
TEST_CASE("a directory standing where a blob's file was is cleared so its bytes are taken again", "[store]") {
  TempDir dir{"blob-store-test"};
  FakeClock clock;
  auto store = OpenStore(dir, 0, clock);
  const std::string bytes = "bytes whose file becomes a folder";
  REQUIRE(Put(*store, bytes).ok());
  const fs::path file = FileOfBlob(dir, Sha256Hex(bytes));
  REQUIRE_FALSE(file.empty());
  fs::remove(file);
  fs::create_directories(file / "inside");
  store->DropUnreadable(Sha256Hex(bytes), "Is a directory");
  CHECK_FALSE(store->Has(Sha256Hex(bytes)));
  CHECK_FALSE(fs::exists(file));
  // One that a restarted store never listed is cleared at the next commit.
  fs::create_directories(file / "inside");
  REQUIRE(Put(*store, bytes).ok());
  CHECK(store->Has(Sha256Hex(bytes)));
  CHECK(fs::is_regular_file(file));
}
