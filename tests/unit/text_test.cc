#include <catch2/catch.hpp>

#include "common/session.h"
#include "common/text.h"

using clusterd::JsonQuote;
using clusterd::CsvField;
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

TEST_CASE("JsonQuote escapes quotes, backslashes and control characters", "[text]") {
  REQUIRE(JsonQuote("loss") == "\"loss\"");
  REQUIRE(JsonQuote("a\"b\\c") == "\"a\\\"b\\\\c\"");
  REQUIRE(JsonQuote("x\ny") == "\"x\\u000ay\"");
  // Whatever a terminal acts on shows as what it is: DEL, C1, the line
  // separator, bidirectional marks, overrides and isolates.
  REQUIRE(JsonQuote("a\x7f" "b\xc2\x85" "c\xe2\x80\xa8" "d\xe2\x80\x8f" "e\xe2\x80\xae" "f\xe2\x81\xa9" "g") ==
          "\"a\\u007fb\\u0085c\\u2028d\\u200fe\\u202ef\\u2069g\"");
  REQUIRE(clusterd::HasTerminalControls("right\xe2\x80\x8fto left"));
  REQUIRE_FALSE(clusterd::HasTerminalControls("caf\xc3\xa9 \xe2\x80\x94 \xe2\x80\x99"));  // é, em dash, quote
}

TEST_CASE("JsonQuote keeps UTF-8 and turns each byte that starts no character into U+FFFD", "[text]") {
  REQUIRE(JsonQuote("caf\xC3\xA9") == "\"caf\xC3\xA9\"");
  // `printf 'bad \377\376 bytes'` from a rank: two bytes, two replacements.
  REQUIRE(JsonQuote("bad \xFF\xFE bytes") == "\"bad \xEF\xBF\xBD\xEF\xBF\xBD bytes\"");
}

TEST_CASE("JoinPath puts one slash between and keeps absolute paths", "[text]") {
  REQUIRE(clusterd::JoinPath("/w/", "ckpt") == "/w/ckpt");
  REQUIRE(clusterd::JoinPath("/w", "ckpt") == "/w/ckpt");
  REQUIRE(clusterd::JoinPath("/w", "/abs") == "/abs");
  REQUIRE(clusterd::JoinPath("", "rel") == "rel");
}

TEST_CASE("CsvField quotes a field holding a comma, a quote, CR or LF, and only those", "[text]") {
  CHECK(CsvField("plain value 1.5") == "plain value 1.5");
  CHECK(CsvField("a,b") == "\"a,b\"");
  CHECK(CsvField("say \"hi\"") == "\"say \"\"hi\"\"\"");
  CHECK(CsvField("line\nbreak") == "\"line\nbreak\"");
  CHECK(CsvField("carriage\rreturn") == "\"carriage\rreturn\"");
}
