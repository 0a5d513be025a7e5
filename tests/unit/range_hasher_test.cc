#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "common/storage/range_hasher.h"
#include "common/sha256.h"
#include "temp_tree.h"

using namespace clusterd;
using clusterd::testing::TempTree;

namespace {

std::string Bytes(size_t n) {
  std::string data(n, '\0');
  uint32_t x = 7;
  for (char& c : data) {
    x = x * 1103515245 + 12345;
    c = static_cast<char>(x >> 16);
  }
  return data;
}

// Writes `data` at `offset` + its range's start, in `step`-byte writes,
// telling the hasher after each.
void WriteRange(RangeHasher& hasher, int fd, int64_t offset, const std::string& data, int64_t from, int64_t size,
                size_t range, int64_t step) {
  for (int64_t at = 0; at < size; at += step) {
    int64_t n = std::min(step, size - at);
    REQUIRE(pwrite(fd, data.data() + from + at, static_cast<size_t>(n), offset + from + at) == n);
    REQUIRE(hasher.Wrote(range, n).ok());
  }
}

}  // namespace

TEST_CASE("ranges written out of order and at once hash to the blob's digest", "[storage][s3]") {
  TempTree dir;
  const std::string data = Bytes(3 * 1024 * 1024 + 17);
  const int64_t offset = 4096;  // the blob is one piece of a larger file
  int fd = open(dir.Path("file").c_str(), O_RDWR | O_CREAT, 0600);
  REQUIRE(fd >= 0);
  const int64_t part = (static_cast<int64_t>(data.size()) + 2) / 3;
  std::vector<int64_t> sizes = {part, part, static_cast<int64_t>(data.size()) - 2 * part};

  SECTION("the last range first, then the others together") {
    RangeHasher hasher(fd, offset, sizes, "file");
    WriteRange(hasher, fd, offset, data, 2 * part, sizes[2], 2, 65536);
    std::thread second([&] { WriteRange(hasher, fd, offset, data, part, sizes[1], 1, 16384); });
    WriteRange(hasher, fd, offset, data, 0, sizes[0], 0, 4099);
    second.join();
    auto digest = hasher.Finish();
    REQUIRE(digest.ok());
    CHECK(*digest == Sha256Hex(data));
  }
  SECTION("a range not fully written fails Finish, naming the file") {
    RangeHasher hasher(fd, offset, sizes, "file");
    WriteRange(hasher, fd, offset, data, 0, sizes[0], 0, 65536);
    WriteRange(hasher, fd, offset, data, 2 * part, sizes[2], 2, 65536);
    auto digest = hasher.Finish();
    REQUIRE_FALSE(digest.ok());
    CHECK(digest.status().message() == "file: " + std::to_string(part) + " of " + std::to_string(data.size()) +
                                           " bytes were written");
  }
  close(fd);
}
