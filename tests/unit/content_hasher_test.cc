// ContentHasher: files' hashes from buffers handed over piece by piece,
// with few buffers, so that the packer waits for free ones.
#include <catch2/catch.hpp>

#include <random>

#include "cli/content_hasher.h"
#include "common/sha256.h"

using namespace clusterd;

TEST_CASE("ContentHasher hashes each file from the buffers handed to it", "[package][hasher]") {
  std::mt19937 rng(3);
  std::vector<std::string> contents;
  for (size_t size : {0, 1, 999, 1000, 1001, 5000, 64000}) {
    std::string s(size, '\0');
    for (char& c : s) c = static_cast<char>(rng());
    contents.push_back(s);
  }
  std::vector<TreeEntry> files(contents.size());
  const size_t piece = 1000;
  {
    ContentHasher hasher(2, piece);
    std::vector<char> buffer(piece);
    for (size_t i = 0; i < files.size(); ++i) {
      for (size_t at = 0; at < contents[i].size(); at += piece) {
        size_t n = std::min(piece, contents[i].size() - at);
        std::copy_n(contents[i].data() + at, n, buffer.data());
        hasher.Add(&files[i], &buffer, n);
        REQUIRE(buffer.size() == piece);  // a free one in its place
      }
      hasher.End(&files[i]);
    }
    hasher.Wait();
    for (size_t i = 0; i < files.size(); ++i) REQUIRE(files[i].sha256 == Sha256Hex(contents[i]));
  }
  // A file not ended gets no hash; stopping mid-way is fine.
  TreeEntry unfinished;
  {
    ContentHasher hasher(1, piece);
    std::vector<char> buffer(piece);
    hasher.Add(&unfinished, &buffer, piece);
  }
  REQUIRE(unfinished.sha256.empty());
}
