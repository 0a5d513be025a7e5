#include <catch2/catch.hpp>

#include "common/net/leader_redirect.h"

using clusterd::ParseHeadAddresses;

TEST_CASE("every head of --address H1:P,H2:P is checked, and a bad one is named", "[ha]") {
  auto two = ParseHeadAddresses("10.0.0.1:6379,[::1]:6380");
  REQUIRE(two.ok());
  CHECK(*two == std::vector<std::string>{"10.0.0.1:6379", "[::1]:6380"});
  auto one = ParseHeadAddresses("head:6379");
  REQUIRE(one.ok());
  CHECK(one->size() == 1);

  auto empty_piece = ParseHeadAddresses("10.0.0.1:6379,");
  REQUIRE_FALSE(empty_piece.ok());
  CHECK_THAT(empty_piece.status().message(), Catch::Contains("has an empty head address"));
  auto bad_port = ParseHeadAddresses("10.0.0.1:6379,10.0.0.2:http");
  REQUIRE_FALSE(bad_port.ok());
  CHECK_THAT(bad_port.status().message(), Catch::Contains("head address '10.0.0.2:http'"));
}
