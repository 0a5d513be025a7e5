#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "common/storage/hash_cache.h"
#include "common/sha256.h"
#include "temp_tree.h"

using namespace clusterd;
using clusterd::testing::TempTree;

namespace {

const std::string kShaA(64, 'a');
const std::string kShaB(64, 'b');

// Stamps from long ago are never racy.
FileStamp Old(uint64_t size) { return FileStamp{size, 1000000000, 1000000001, 42}; }

int64_t Now() {
  timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return int64_t{t.tv_sec} * 1000000000 + t.tv_nsec;
}

std::string OnlyFile(const std::string& dir) {
  std::string found;
  for (const auto& e : std::filesystem::directory_iterator(dir)) found = e.path();
  return found;
}

}  // namespace

TEST_CASE("hash cache remembers file hashes and package ids across runs", "[package][hash_cache]") {
  TempTree t;
  std::string dir = t.Path("cache/clusterd/hashes");
  {
    HashCache cache = HashCache::Load(dir, "/work/proj");
    CHECK(cache.note().empty());
    CHECK_FALSE(cache.Lookup("a.py", Old(1)));
    cache.Put("a.py", Old(1), kShaA);
    cache.Put("dir/with space\nand newline\\", Old(2), kShaB);
    cache.PutPackage(kShaA, CachedPackage{kShaB, 10240});
    REQUIRE(cache.Save().ok());
  }
  struct stat st;
  REQUIRE(stat(dir.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
  std::string file = OnlyFile(dir);
  CHECK(file == dir + "/" + Sha256Hex("/work/proj").substr(0, 32));
  REQUIRE(stat(file.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);

  HashCache cache = HashCache::Load(dir, "/work/proj");
  CHECK(cache.note().empty());
  CHECK(cache.Lookup("a.py", Old(1)) == kShaA);
  CHECK(cache.Lookup("dir/with space\nand newline\\", Old(2)) == kShaB);
  FileStamp touched = Old(1);
  touched.mtime_ns += 1;
  CHECK_FALSE(cache.Lookup("a.py", touched));
  FileStamp moved = Old(1);
  moved.ino = 43;
  CHECK_FALSE(cache.Lookup("a.py", moved));
  REQUIRE(cache.LookupPackage(kShaA));
  CHECK(cache.LookupPackage(kShaA)->id == kShaB);
  CHECK(cache.LookupPackage(kShaA)->size == 10240);
  CHECK_FALSE(cache.LookupPackage(kShaB));
  // Another folder has its own file.
  CHECK_FALSE(HashCache::Load(dir, "/work/other").Lookup("a.py", Old(1)));
}

TEST_CASE("a discarded hash cache is gone and another folder's stays", "[package][hash_cache]") {
  TempTree t;
  std::string dir = t.Path("hashes");
  for (const char* root : {"/work/job.attempt-0", "/work/job.attempt-1"}) {
    HashCache cache = HashCache::Load(dir, root);
    cache.Put("a.py", Old(1), kShaA);
    REQUIRE(cache.Save().ok());
  }
  HashCache::Discard(dir, "/work/job.attempt-0");
  CHECK(OnlyFile(dir) == dir + "/" + Sha256Hex("/work/job.attempt-1").substr(0, 32));
  CHECK_FALSE(HashCache::Load(dir, "/work/job.attempt-0").Lookup("a.py", Old(1)));
  CHECK(HashCache::Load(dir, "/work/job.attempt-1").Lookup("a.py", Old(1)) == kShaA);
  HashCache::Discard(dir, "/work/never-cached");  // nothing to remove: no error, nothing else gone
  HashCache::Discard("", "/work/job.attempt-1");  // no cache folder: nothing
  CHECK(HashCache::Load(dir, "/work/job.attempt-1").Lookup("a.py", Old(1)) == kShaA);
}

TEST_CASE("hash cache never trusts racy entries", "[package][hash_cache]") {
  TempTree t;
  std::string dir = t.Path("hashes");
  FileStamp fresh;
  {
    HashCache cache = HashCache::Load(dir, "/p");
    // Changed after Load began: in its clock tick, or later. (Taken before
    // Load, a fine-grained Now() can fall before Load's coarse start when a
    // tick passes in between, and the entry is then rightly kept.)
    fresh = FileStamp{5, Now(), Now(), 7};
    cache.Put("fresh", fresh, kShaA);
    cache.Put("old", Old(1), kShaB);
    CHECK(cache.Lookup("fresh", fresh) == kShaA);  // within the run, it was just hashed
    REQUIRE(cache.Save().ok());
  }
  HashCache cache = HashCache::Load(dir, "/p");
  CHECK_FALSE(cache.Lookup("fresh", fresh));
  CHECK(cache.Lookup("old", Old(1)) == kShaB);

  // A file whose mtime is not older than the cache file is racy (git's rule),
  // even if an entry for it made it into the file.
  std::string file = OnlyFile(dir);
  timespec times[2] = {{0, UTIME_OMIT}, {1, 0}};  // "written" as the file changed
  REQUIRE(utimensat(AT_FDCWD, file.c_str(), times, 0) == 0);
  CHECK_FALSE(HashCache::Load(dir, "/p").Lookup("old", Old(1)));
}

TEST_CASE("hash cache keeps only the entries still in use", "[package][hash_cache]") {
  TempTree t;
  std::string dir = t.Path("hashes");
  {
    HashCache cache = HashCache::Load(dir, "/p");
    cache.Put("gone", Old(1), kShaA);
    cache.Put("kept", Old(2), kShaB);
    REQUIRE(cache.Save().ok());
  }
  {
    HashCache cache = HashCache::Load(dir, "/p");
    CHECK(cache.Lookup("kept", Old(2)));
    cache.PutPackage(kShaA, CachedPackage{kShaA, 1});
    REQUIRE(cache.Save().ok());
  }
  HashCache cache = HashCache::Load(dir, "/p");
  CHECK_FALSE(cache.Lookup("gone", Old(1)));
  CHECK(cache.Lookup("kept", Old(2)) == kShaB);
}

TEST_CASE("a damaged, foreign or unsafe cache file is ignored, never fatal", "[package][hash_cache]") {
  TempTree t;
  std::string dir = t.Path("hashes");
  {
    HashCache cache = HashCache::Load(dir, "/p");
    cache.Put("a", Old(1), kShaA);
    REQUIRE(cache.Save().ok());
  }
  std::string file = OnlyFile(dir);
  std::string good = t.Read("hashes/" + file.substr(file.rfind('/') + 1));
  auto load_with = [&](const std::string& text) {
    { std::ofstream(file, std::ios::trunc) << text; }
    chmod(file.c_str(), 0600);
    return HashCache::Load(dir, "/p");
  };
  for (size_t at : {size_t{0}, good.size() / 2, good.size() - 3}) {
    std::string flipped = good;
    flipped[at] ^= 1;
    HashCache cache = load_with(flipped);
    CHECK_FALSE(cache.Lookup("a", Old(1)));
    CHECK(cache.note().find("damaged") != std::string::npos);
  }
  CHECK_FALSE(load_with(good.substr(0, good.size() - 10)).Lookup("a", Old(1)));
  CHECK_FALSE(load_with("").Lookup("a", Old(1)));
  CHECK_FALSE(load_with(std::string(5000, '\n')).Lookup("a", Old(1)));
  CHECK(load_with(good).Lookup("a", Old(1)) == kShaA);

  // Another folder's file under this name (a copy) is not believed.
  std::string other_file = dir + "/" + Sha256Hex("/q").substr(0, 32);
  std::filesystem::copy_file(file, other_file);
  CHECK_FALSE(HashCache::Load(dir, "/q").Lookup("a", Old(1)));

  chmod(file.c_str(), 0644);  // readable by others: someone may have written it
  HashCache loose = HashCache::Load(dir, "/p");
  CHECK_FALSE(loose.Lookup("a", Old(1)));
  CHECK(loose.note().find("not a private file") != std::string::npos);

  // A folder open to others is made private again before writing into it.
  chmod(dir.c_str(), 0777);
  loose.Put("b", Old(1), kShaB);
  REQUIRE(loose.Save().ok());
  struct stat st;
  REQUIRE(stat(dir.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
}

TEST_CASE("hash cache folder follows XDG_CACHE_HOME, then HOME", "[package][hash_cache]") {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  std::string saved_xdg = xdg ? xdg : "", saved_home = home ? home : "";
  setenv("XDG_CACHE_HOME", "/x/cache", 1);
  setenv("HOME", "/home/u", 1);
  CHECK(DefaultHashCacheDir() == "/x/cache/clusterd/hashes");
  unsetenv("XDG_CACHE_HOME");
  CHECK(DefaultHashCacheDir() == "/home/u/.cache/clusterd/hashes");
  unsetenv("HOME");
  CHECK(DefaultHashCacheDir().empty());
  xdg ? setenv("XDG_CACHE_HOME", saved_xdg.c_str(), 1) : unsetenv("XDG_CACHE_HOME");
  home ? setenv("HOME", saved_home.c_str(), 1) : unsetenv("HOME");
  // No folder: nothing is saved, nothing fails.
  HashCache none = HashCache::Load("", "/p");
  none.Put("a", Old(1), kShaA);
  CHECK(none.Save().ok());
  CHECK(none.file().empty());
}
