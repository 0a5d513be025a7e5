#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "common/sha256.h"

using namespace clusterd;

TEST_CASE("SHA-256 matches the FIPS 180-2 vectors", "[package][sha256]") {
  CHECK(Sha256Hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(Sha256Hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(Sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST_CASE("SHA-256 fed in odd-sized pieces equals one shot", "[package][sha256]") {
  std::string data(1 << 20, '\0');
  uint32_t x = 12345;
  for (char& c : data) {
    x = x * 1103515245 + 12345;
    c = static_cast<char>(x >> 16);
  }
  Sha256 pieces;
  size_t at = 0, step = 1;
  while (at < data.size()) {
    size_t n = std::min(step, data.size() - at);
    pieces.Update(data.data() + at, n);
    at += n;
    step = step * 3 + 7;  // 1, 10, 37, ... crosses every block boundary shape
    if (step > 200000) step = 13;
  }
  std::string expected = Sha256Hex(data);
  CHECK(pieces.HexDigest() == expected);
  // HexDigest does not end the message.
  pieces.Update("x", 1);
  CHECK(pieces.HexDigest() == Sha256Hex(data + "x"));

  char path[] = "/tmp/sha256_test_XXXXXX";
  int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  REQUIRE(write(fd, data.data(), data.size()) == static_cast<ssize_t>(data.size()));
  close(fd);
  auto file_hash = Sha256OfFile(path);
  REQUIRE(file_hash.ok());
  CHECK(*file_hash == expected);
  unlink(path);
  CHECK(Sha256OfFile(path).status().code() == Status::Code::kIOError);
}
