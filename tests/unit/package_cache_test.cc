// The node's package cache with a fake head over real tar archives, each
// case both ways (unpacked while it streams, and downloaded to a file
// first): one fetch per package, links shared between jobs, a bad transfer
// fetched once more, a tree a job changed in place unpacked again, LRU
// eviction, and two threads asking at once.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "byte_source_util.h"
#include "common/sha256.h"
#include "daemon/agent/package_cache.h"
#include "temp_tree.h"

using namespace clusterd;
using clusterd::testing::TempTree;
namespace fs = std::filesystem;

namespace {

// A package made with tar from `files` (relative path -> content); its id is
// the archive's SHA-256, as clusterctl makes it.
struct Package {
  std::string id;
  std::string archive;
  int64_t size = 0;
};

Package MakePackage(const TempTree& tmp, const std::string& name, const std::map<std::string, std::string>& files) {
  std::string src = name + "-src";
  std::string list;
  for (const auto& [path, content] : files) {
    tmp.Write(src + "/" + path, content, path.size() > 3 && path.substr(path.size() - 3) == ".sh" ? 0755 : 0644);
    list += " '" + path + "'";
  }
  Package p;
  p.archive = tmp.Path(name + ".tar");
  std::string command = "tar --format=pax -cf '" + p.archive + "' -C '" + tmp.Path(src) + "'" + list;
  REQUIRE(std::system(command.c_str()) == 0);
  p.id = *Sha256OfFile(p.archive);
  p.size = static_cast<int64_t>(fs::file_size(p.archive));
  return p;
}

// Serves packages by id, counting fetches; `corrupt` bad transfers come first.
struct FakeHead {
  std::map<std::string, std::string> archives;
  std::atomic<int> fetches{0};
  std::atomic<int> corrupt{0};

  PackageCache::FetchFn Fetch() {
    return [this](const std::string& id, const std::string& path) -> Status {
      ++fetches;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // a real transfer takes time
      if (corrupt > 0) {
        --corrupt;
        return Status::Corruption("blob " + id + " from the head failed its hash check");
      }
      fs::copy_file(archives.at(id), path, fs::copy_options::overwrite_existing);
      return Status::Ok();
    };
  }

  // The same as a stream; a bad transfer flips a byte of a header, so that
  // the extraction fails before the hash check does.
  PackageCache::OpenFn Open() {
    return [this](const std::string& id, int64_t) -> std::unique_ptr<ByteSource> {
      ++fetches;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      std::ifstream in(archives.at(id), std::ios::binary);
      auto source = std::make_unique<testing::MemorySource>(std::string(std::istreambuf_iterator<char>(in), {}), id);
      if (corrupt > 0) {
        --corrupt;
        source->flip_at = 100;
      }
      return source;
    };
  }
};

// A temporary folder and a fake head serving the packages made in it.
struct ServedPackages {
  TempTree tmp;
  FakeHead head;

  // A package of `files`, served by the head.
  Package Serve(const std::string& name, const std::map<std::string, std::string>& files) {
    Package p = MakePackage(tmp, name, files);
    head.archives[p.id] = p.archive;
    return p;
  }
  // A cache in tmp/cache holding up to `cap_bytes` (0: no cap), that gets
  // its packages from the head unpacked while they stream, or else as files.
  PackageCache Cache(int64_t cap_bytes, bool streamed) {
    const PackageCache::Options options{tmp.Path("cache"), cap_bytes};
    return streamed ? PackageCache(options, head.Open()) : PackageCache(options, head.Fetch());
  }
};

ino_t Inode(const std::string& path) {
  struct stat st {};
  REQUIRE(lstat(path.c_str(), &st) == 0);
  return st.st_ino;
}

std::string Read(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

TEST_CASE_METHOD(ServedPackages, "a package is fetched once and every job gets its own folder of links to it",
                 "[package_cache]") {
  Package p = Serve("p", {{"train.sh", "#!/bin/sh\necho hi\n"}, {"data/x.txt", "42"}});
  const bool streamed = GENERATE(false, true);
  PackageCache cache = Cache(0, streamed);

  REQUIRE(cache.Checkout(p.id, p.size, tmp.Path("work/job-1")).ok());
  REQUIRE(cache.Checkout(p.id, p.size, tmp.Path("work/job-2")).ok());
  REQUIRE(head.fetches == 1);
  REQUIRE(Read(tmp.Path("work/job-2/data/x.txt")) == "42");
  REQUIRE(Inode(tmp.Path("work/job-1/train.sh")) == Inode(tmp.Path("work/job-2/train.sh")));
  REQUIRE((fs::status(tmp.Path("work/job-1/train.sh")).permissions() & fs::perms::owner_exec) != fs::perms::none);
  REQUIRE(cache.UsedBytes() == 2 + static_cast<int64_t>(std::string("#!/bin/sh\necho hi\n").size()));

  // A retry on this node keeps what its last attempt left.
  tmp.Write("work/job-1/checkpoints/epoch-1", "state");
  REQUIRE(cache.Checkout(p.id, p.size, tmp.Path("work/job-1")).ok());
  REQUIRE(Read(tmp.Path("work/job-1/checkpoints/epoch-1")) == "state");
  REQUIRE_FALSE(fs::exists(tmp.Path("work/job-2/checkpoints")));
}

TEST_CASE_METHOD(ServedPackages, "a bad transfer is fetched once more, a package bad twice fails with the reason",
                 "[package_cache]") {
  Package p = Serve("p", {{"a", "a"}});
  const bool streamed = GENERATE(false, true);
  PackageCache cache = Cache(0, streamed);

  head.corrupt = 1;
  REQUIRE(cache.Checkout(p.id, p.size, tmp.Path("work/j1")).ok());
  REQUIRE(head.fetches == 2);

  Package q = Serve("q", {{"b", "b"}});
  head.corrupt = 2;
  Status failed = cache.Checkout(q.id, q.size, tmp.Path("work/j2"));
  REQUIRE(failed.code() == Status::Code::kCorruption);
  REQUIRE(failed.message().rfind("package " + q.id + " failed its hash check twice", 0) == 0);
  REQUIRE_FALSE(fs::exists(tmp.Path("work/j2")));
  for (const auto& e : fs::directory_iterator(tmp.Path("cache"))) {
    REQUIRE(e.path().filename().string().find(".tar.") == std::string::npos);  // no download left behind
    REQUIRE(e.path().filename().string().find(".tmp-") == std::string::npos);  // nor a half-unpacked folder
  }
}

TEST_CASE_METHOD(ServedPackages, "a tree changed in place through a job's link is unpacked again before the next job",
                 "[package_cache]") {
  Package p = Serve("p", {{"config.json", "{\"lr\": 0.1}"}});
  const bool streamed = GENERATE(false, true);
  PackageCache cache = Cache(0, streamed);
  REQUIRE(cache.Checkout(p.id, p.size, tmp.Path("work/j1")).ok());
  std::ofstream(tmp.Path("work/j1/config.json"), std::ios::trunc) << "{\"lr\": 99}";  // in place: through the link
  REQUIRE(cache.Checkout(p.id, p.size, tmp.Path("work/j2")).ok());
  REQUIRE(head.fetches == 2);
  REQUIRE(Read(tmp.Path("work/j2/config.json")) == "{\"lr\": 0.1}");
}

// A failed attempt that made its script read-only must not stop the retry
// (or the next job of the same code) from running it.
TEST_CASE_METHOD(ServedPackages, "a file a job chmods through its link is unpacked again before the next job",
                 "[package_cache]") {
  Package p = Serve("p", {{"run.sh", "#!/bin/sh\n"}});
  PackageCache cache = Cache(0, false);
  REQUIRE(cache.Checkout(p.id, p.size, tmp.Path("work/j1")).ok());
  const auto mode = fs::status(tmp.Path("work/j1/run.sh")).permissions();
  fs::permissions(tmp.Path("work/j1/run.sh"), fs::perms(0400));
  REQUIRE(cache.Checkout(p.id, p.size, tmp.Path("work/j2")).ok());
  CHECK(head.fetches == 2);
  CHECK(fs::status(tmp.Path("work/j2/run.sh")).permissions() == mode);
}

TEST_CASE_METHOD(ServedPackages, "the cap evicts the least recently used package", "[package_cache]") {
  Package a = Serve("a", {{"f", std::string(400, 'a')}});
  Package b = Serve("b", {{"f", std::string(400, 'b')}});
  Package c = Serve("c", {{"f", std::string(400, 'c')}});
  const bool streamed = GENERATE(false, true);
  PackageCache cache = Cache(1000, streamed);
  REQUIRE(cache.Checkout(a.id, 400, tmp.Path("work/1")).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  REQUIRE(cache.Checkout(b.id, 400, tmp.Path("work/2")).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  REQUIRE(cache.Checkout(a.id, 400, tmp.Path("work/3")).ok());  // a used again: b is now the oldest
  REQUIRE(cache.Checkout(c.id, 400, tmp.Path("work/4")).ok());
  REQUIRE(fs::exists(tmp.Path("cache/" + a.id)));
  REQUIRE_FALSE(fs::exists(tmp.Path("cache/" + b.id)));
  REQUIRE(fs::exists(tmp.Path("cache/" + c.id)));
  REQUIRE(Read(tmp.Path("work/2/f")) == std::string(400, 'b'));  // a job's links outlive eviction
}

// A package unpacked on a full disk whose index could not be written must
// not keep its tree, which eviction (counting by index) never sees: every
// later package would fail for want of room.
TEST_CASE_METHOD(ServedPackages,
                 "a tree left without its index goes when room is made and does not hold the cache's room",
                 "[package_cache]") {
  Package a = Serve("a", {{"f", std::string(400, 'a')}});
  Package b = Serve("b", {{"f", std::string(400, 'b')}});
  const bool streamed = GENERATE(false, true);
  PackageCache cache = Cache(1000, streamed);
  // A tree without its index (the unpack failed writing it, or the agent
  // crashed): removed when room is made for another.
  REQUIRE(cache.Checkout(a.id, 400, tmp.Path("work/1")).ok());
  fs::remove(tmp.Path("cache/" + a.id + ".index"));
  const std::string left(64, 'e');
  fs::create_directories(tmp.Path("cache/" + left + "/sub"));
  tmp.Write("cache/" + left + "/sub/f", std::string(900, 'x'));
  REQUIRE(cache.Checkout(b.id, 400, tmp.Path("work/2")).ok());
  CHECK_FALSE(fs::exists(tmp.Path("cache/" + left)));
  CHECK_FALSE(fs::exists(tmp.Path("cache/" + a.id)));
  CHECK(fs::exists(tmp.Path("cache/" + b.id)));
}

TEST_CASE_METHOD(ServedPackages, "two launches of one package at once fetch it once", "[package_cache]") {
  Package p = Serve("p", {{"x", "x"}});
  const bool streamed = GENERATE(false, true);
  PackageCache cache = Cache(0, streamed);
  Status first, second;
  std::thread t1([&] { first = cache.Checkout(p.id, p.size, tmp.Path("work/a")); });
  std::thread t2([&] { second = cache.Checkout(p.id, p.size, tmp.Path("work/b")); });
  t1.join();
  t2.join();
  REQUIRE(first.ok());
  REQUIRE(second.ok());
  REQUIRE(head.fetches == 1);
}
