// cmake/embed_file.cmake compiles a file's bytes into the binary exactly:
// every byte value (NUL, quotes, backslash, bytes past 0x7f) comes out as it
// went in, with a NUL after the last. unit_tests embeds data/every_byte.bin
// (bytes 0 to 255 in order) the way the daemon embeds its dashboard.
#include <catch2/catch.hpp>

#include <cstddef>
#include <fstream>
#include <iterator>
#include <string>

namespace clusterd::embedded {
extern const unsigned char every_byte_bin[];
extern const std::size_t every_byte_bin_size;
}  // namespace clusterd::embedded

using namespace clusterd;

TEST_CASE("an embedded file holds every byte value as the file does", "[embed]") {
  std::ifstream in(std::string(CLUSTERD_SOURCE_DIR) + "/tests/unit/data/every_byte.bin", std::ios::binary);
  REQUIRE(in.good());
  const std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  REQUIRE(file.size() == 256);
  REQUIRE(embedded::every_byte_bin_size == file.size());
  for (std::size_t i = 0; i < file.size(); ++i) {
    INFO("byte " << i);
    REQUIRE(embedded::every_byte_bin[i] == static_cast<unsigned char>(file[i]));
    REQUIRE(embedded::every_byte_bin[i] == i);
  }
  REQUIRE(embedded::every_byte_bin[file.size()] == 0);
}
