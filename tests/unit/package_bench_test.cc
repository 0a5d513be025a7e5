// Not a test: the speed check of working_dir packing, run by hand with
//   build/tests/unit_tests "[.package_bench]"
// Scan + hash + pack of 2,000 small files and 4 x 24 MiB (about 100 MiB)
// against `tar -cf` of the same folder, cold (no hash cache) and warm (the
// id straight from the cache). Both read from the page cache.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "cli/package_builder.h"
#include "common/storage/hash_cache.h"
#include "temp_tree.h"

using namespace clusterd;
using clusterd::testing::TempTree;

namespace {

double MedianMs(int runs, const std::function<void()>& setup, const std::function<void()>& body) {
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    setup();
    auto start = std::chrono::steady_clock::now();
    body();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace

TEST_CASE("packing speed against tar", "[.package_bench]") {
  TempTree t, out;
  std::mt19937_64 rng(1);
  auto random_bytes = [&](size_t n) {
    std::string s(n, '\0');
    for (size_t i = 0; i + 8 <= n; i += 8) {
      uint64_t v = rng();
      std::memcpy(&s[i], &v, 8);
    }
    return s;
  };
  for (int i = 0; i < 2000; ++i) {
    t.Write("src/d" + std::to_string(i / 50) + "/f" + std::to_string(i) + ".py", random_bytes(512 + rng() % 4096));
  }
  for (int i = 0; i < 4; ++i) t.Write("data/blob" + std::to_string(i) + ".bin", random_bytes(24 << 20));
  std::string tar_cmd = "tar -cf " + out.Path("ref.tar") + " -C " + t.root() + " .";
  REQUIRE(std::system(tar_cmd.c_str()) == 0);  // also warms the page cache
  double tar_ms = MedianMs(5, [] {}, [&] { REQUIRE(std::system(tar_cmd.c_str()) == 0); });

  std::string cache_dir = out.Path("hashes");
  std::string id;
  double cold_ms = MedianMs(
      5, [&] { std::system(("rm -rf " + cache_dir).c_str()); },
      [&] {
        HashCache cache = HashCache::Load(cache_dir, t.root());
        auto p = PrepareWorkingDir(t.root(), {}, &cache, PackageFile(out.Path("p.tar")));
        REQUIRE(p.ok());
        REQUIRE(p->built);
        id = p->id;
      });
  double warm_ms = MedianMs(
      9, [] {},
      [&] {
        HashCache cache = HashCache::Load(cache_dir, t.root());
        auto p = PrepareWorkingDir(t.root(), {}, &cache, PackageFile(out.Path("w.tar")));
        REQUIRE(p.ok());
        REQUIRE_FALSE(p->built);
        REQUIRE(p->id == id);
      });
  double scan_ms = MedianMs(9, [] {}, [&] { REQUIRE(ScanWorkingDir(t.root(), {}).ok()); });
  double load_ms = MedianMs(9, [] {}, [&] { REQUIRE(HashCache::Load(cache_dir, t.root()).note().empty()); });
  double pack_ms = MedianMs(
      5, [] {},
      [&] {
        auto tree = ScanWorkingDir(t.root(), {});
        HashCache cache = HashCache::Load(cache_dir, t.root());
        REQUIRE(HashesFromCache(&*tree, &cache) == 0);
        REQUIRE(BuildPackage(&*tree, out.Path("k.tar")).ok());
      });
  std::printf("2,000 files + 4 x 24 MiB (%.1f MiB): tar -cf %.0f ms; cold scan+hash+pack %.0f ms (%.2fx tar); "
              "scan+pack with hashes known %.0f ms; warm id from cache %.1f ms (scan %.1f ms, cache load %.1f ms)\n",
              static_cast<double>(std::filesystem::file_size(out.Path("p.tar"))) / (1 << 20), tar_ms, cold_ms,
              cold_ms / tar_ms, pack_ms, warm_ms, scan_ms, load_ms);
}
