// Not a test: the speed of moving a 200 MiB checkpoint through the head's
// store over loopback gRPC, printed as warnings; run by hand with
//   build/tests/unit_tests "[.tree_bench]"
// (CLUSTERD_TREE_BENCH_MB=500 for another size).
// A first upload, a re-upload of the unchanged folder with and without the
// hash cache (the cache's load and save counted), and a restore (synced to
// disk) with 1, 2 and 4 streams. The store's disk is the same as the
// folder's, so upload and restore pay for both ends.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <thread>

#include <fmt/format.h>

#include "common/storage/hash_cache.h"
#include "common/storage/tree_transfer.h"
#include "store_server.h"
#include "temp_tree.h"

using namespace clusterd;
using clusterd::testing::StoreServer;
using clusterd::testing::TempTree;

namespace {

double Ms(const std::function<void()>& body) {
  auto start = std::chrono::steady_clock::now();
  body();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

std::string RandomBytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string s(n, '\0');
  for (size_t i = 0; i + 8 <= n; i += 8) {
    uint64_t v = rng();
    std::memcpy(&s[i], &v, 8);
  }
  return s;
}

double MiBps(int64_t bytes, double ms) { return static_cast<double>(bytes) / (1 << 20) / (ms / 1000); }

}  // namespace

TEST_CASE("tree transfer speed", "[.tree_bench]") {
  StoreServer head;
  auto client = head.Client();
  TempTree t;
  const char* mb_env = std::getenv("CLUSTERD_TREE_BENCH_MB");
  const int64_t mib = mb_env != nullptr ? std::atoll(mb_env) : 200;
  // A checkpoint: model and optimizer state (60:40), and a few small files.
  t.Write("ckpt/model.pt", RandomBytes(static_cast<size_t>(mib * 6 / 10) << 20, 1));
  t.Write("ckpt/optimizer.pt", RandomBytes(static_cast<size_t>(mib - mib * 6 / 10) << 20, 2));
  for (int i = 0; i < 20; ++i) t.Write("ckpt/meta/f" + std::to_string(i) + ".json", RandomBytes(2000, 10 + i));
  const int64_t total = (mib << 20) + 20 * 2000;
  // Files changed in the cache's own clock tick are never trusted (racy).
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const std::string root = t.Path("ckpt");
  const std::string cache_dir = t.Path("hashes");

  Result<UploadedTree> up = Status::Internal("not run");
  double cold_ms = Ms([&] {
    HashCache cache = HashCache::Load(cache_dir, root);
    TreeUploadOptions options;
    options.cache = &cache;
    up = UploadTree(*client, root, {""}, options);
    REQUIRE(cache.Save().ok());
  });
  REQUIRE(up.ok());
  REQUIRE(up->sent_bytes == total);
  WARN(fmt::format("first upload of {:.0f} MiB: {:.0f} ms ({:.0f} MiB/s)", total / 1048576.0, cold_ms,
                   MiBps(total, cold_ms)));

  for (int run = 0; run < 3; ++run) {
    Result<UploadedTree> again = Status::Internal("not run");
    double plain_ms = Ms([&] { again = UploadTree(*client, root, {""}); });
    REQUIRE(again.ok());
    REQUIRE(again->sent_bytes == 0);
    REQUIRE(again->hashed_bytes == total);
    double cached_ms = Ms([&] {
      HashCache cache = HashCache::Load(cache_dir, root);
      TreeUploadOptions options;
      options.cache = &cache;
      again = UploadTree(*client, root, {""}, options);
      REQUIRE(cache.Save().ok());
    });
    REQUIRE(again.ok());
    REQUIRE(again->hashed_bytes == 0);
    REQUIRE(again->manifest_id == up->manifest_id);
    WARN(fmt::format("unchanged re-upload: {:.1f} ms without the hash cache, {:.1f} ms with it", plain_ms,
                     cached_ms));
  }

  {
    // References: the bytes alone over the wire (hash checked, written
    // nowhere), and a local copy of the folder synced to disk.
    auto manifest = ReadManifest(*client, up->manifest_id);
    REQUIRE(manifest.ok());
    int null_fd = open("/dev/null", O_WRONLY);
    double wire_ms = Ms([&] {
      for (const auto& e : manifest->entries()) {
        for (int j = 0; j < e.chunks_size(); ++j) {
          int64_t size = std::min<int64_t>(manifest->chunk_bytes(), e.size() - j * manifest->chunk_bytes());
          REQUIRE(client->DownloadRange(e.chunks(j), null_fd, 0, size, "/dev/null").ok());
        }
      }
    });
    close(null_fd);
    std::string copy = "cp -r " + root + " " + t.Path("copy") + " && sync -f " + t.Path("copy/model.pt");
    double cp_ms = Ms([&] { REQUIRE(std::system(copy.c_str()) == 0); });
    WARN(fmt::format("references: pieces to /dev/null over one stream {:.0f} ms ({:.0f} MiB/s); cp -r + sync {:.0f} ms "
                     "({:.0f} MiB/s)", wire_ms, MiBps(total, wire_ms), cp_ms, MiBps(total, cp_ms)));
  }

  for (int parallel : {1, 2, 4}) {
    std::string dest = t.Path("restored" + std::to_string(parallel));
    TreeDownloadOptions options;
    options.parallel = parallel;
    Status restored;
    double ms = Ms([&] { restored = DownloadTree(*client, up->manifest_id, dest, options); });
    REQUIRE(restored.ok());
    WARN(fmt::format("restore with {} stream(s), synced: {:.0f} ms ({:.0f} MiB/s)", parallel, ms, MiBps(total, ms)));
  }
}
