#include <catch2/catch.hpp>

#include "common/text.h"

using clusterd::LastLines;

TEST_CASE("LastLines keeps the last lines and is safe on empty or single-line text", "[text]") {
  REQUIRE(LastLines("", 3) == "");
  REQUIRE(LastLines("\n", 3) == "");
  REQUIRE(LastLines("one", 3) == "one");
  REQUIRE(LastLines("one\n", 3) == "one");
  REQUIRE(LastLines("a\nb\nc\nd\n", 2) == "c\nd");
  REQUIRE(LastLines("a\nb\nc\nd", 2) == "c\nd");
  REQUIRE(LastLines("a\nb\n", 5) == "a\nb");
  REQUIRE(LastLines("a\nb\n", 0) == "");
  REQUIRE(LastLines("\n\nx\n", 2) == "\nx");
}
