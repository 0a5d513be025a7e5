// Blobs gone bad alone, on a real folder and an index: a blob whose bytes
// are not its id's, whose file is gone or cannot be read is dropped with
// every owner that held it, each let go with the reason; a good blob, and
// one whose file was replaced after it was hashed, stay.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/sha256.h"
#include "daemon/store/blob_damage.h"

using namespace clusterd;
namespace fs = std::filesystem;

namespace {

struct DamageFixture {
  fs::path dir;
  BlobFiles files;
  std::mutex mutex;
  BlobIndex index;
  std::vector<std::string> evicted;
  std::vector<std::pair<std::string, std::string>> released;  // (owner, why)
  BlobDamage damage;

  DamageFixture()
      : dir(MakeDir()),
        files(dir.string()),
        damage(mutex, index, files,
               {[this](const std::string& id, const char*) {
                  evicted.push_back(id);
                  index.Remove(id);
                },
                [this](const std::string& owner, const std::string& why) {
                  index.DropOwner(owner);
                  released.push_back({owner, why});
                }}) {
    REQUIRE(files.Prepare().ok());
  }
  ~DamageFixture() { fs::remove_all(dir); }

  static fs::path MakeDir() {
    char name[] = "/tmp/blob-damage-test-XXXXXX";
    return mkdtemp(name);
  }
  // A blob `id` in the index whose file holds `bytes`.
  void Put(const std::string& id, const std::string& bytes) {
    const fs::path path = files.PathOf(id);
    fs::create_directories(path.parent_path());
    std::ofstream(path) << bytes;
    index.Add(id, static_cast<int64_t>(bytes.size()), 1);
  }
  UniqueFd Open(const std::string& id) {
    UniqueFd fd{open(files.PathOf(id).c_str(), O_RDONLY | O_CLOEXEC)};
    REQUIRE(fd.ok());
    return fd;
  }
};

}  // namespace

TEST_CASE("a blob whose bytes are not its id's is dropped with every owner that held it", "[store][blob_damage]") {
  DamageFixture f;
  const std::string id = Sha256Hex("checkpoint piece");
  f.Put(id, "checkpoint piece, cut");
  f.index.Pin("job-1", {id}, 1);
  f.index.Pin("job-2", {id}, 1);

  auto dropped = f.damage.DropIfCorrupt(id, f.Open(id));
  REQUIRE(dropped.ok());
  CHECK(*dropped);
  CHECK_FALSE(f.index.Has(id));
  CHECK_FALSE(fs::exists(f.files.PathOf(id)));
  CHECK(f.evicted == std::vector<std::string>{id});
  REQUIRE(f.released.size() == 2);
  CHECK(f.released[0].first == "job-1");
  CHECK(f.released[1].first == "job-2");
  CHECK(f.released[0].second.rfind("its bytes went bad on the head's disk (they hash to ", 0) == 0);
}

TEST_CASE("a good blob, and one whose file was replaced after it was hashed, stay", "[store][blob_damage]") {
  DamageFixture f;
  const std::string good = Sha256Hex("good");
  f.Put(good, "good");
  auto kept = f.damage.DropIfCorrupt(good, f.Open(good));
  REQUIRE(kept.ok());
  CHECK_FALSE(*kept);
  CHECK(f.index.Has(good));

  // The bad file hashed is gone and a new upload stands in its place.
  const std::string id = Sha256Hex("fresh");
  f.Put(id, "stale");
  UniqueFd hashed = f.Open(id);
  fs::remove(f.files.PathOf(id));
  f.Put(id, "fresh");
  auto replaced = f.damage.DropIfCorrupt(id, std::move(hashed));
  REQUIRE(replaced.ok());
  CHECK_FALSE(*replaced);
  CHECK(f.index.Has(id));
  CHECK(f.evicted.empty());
  CHECK(f.released.empty());
}

TEST_CASE("blobs whose files are gone leave the set and the index, and a directory at a blob's path goes too",
          "[store][blob_damage]") {
  DamageFixture f;
  const std::string here = Sha256Hex("here"), gone = Sha256Hex("gone");
  f.Put(here, "here");
  f.Put(gone, "gone");
  f.index.Pin("job-1", {gone}, 1);
  fs::remove(f.files.PathOf(gone));
  std::set<std::string> present{here, gone};
  f.damage.DropGone(present);
  CHECK(present == std::set<std::string>{here});
  CHECK_FALSE(f.index.Has(gone));
  REQUIRE(f.released.size() == 1);
  CHECK(f.released[0] == std::make_pair(std::string("job-1"), std::string(BlobDamage::kFileGone)));

  const std::string odd = Sha256Hex("odd");
  f.Put(odd, "odd");
  fs::remove(f.files.PathOf(odd));
  fs::create_directories(fs::path(f.files.PathOf(odd)) / "inside");
  f.damage.DropUnreadable(odd, "Is a directory");
  CHECK_FALSE(f.index.Has(odd));
  CHECK_FALSE(fs::exists(f.files.PathOf(odd)));
  CHECK(f.released.size() == 1);  // nobody held it
}
