// The token comparison the gRPC services and the dashboard share.
#include <catch2/catch.hpp>

#include "common/net/auth.h"

using clusterd::TokensEqual;

TEST_CASE("TokensEqual accepts only the very token, whatever the length of a guess", "[auth]") {
  const std::string token = "0123456789abcdef0123456789abcdef";
  REQUIRE(TokensEqual(token, token));
  std::string last = token;
  last.back() = 'e';
  REQUIRE_FALSE(TokensEqual(last, token));
  REQUIRE_FALSE(TokensEqual(token.substr(0, 31), token));  // a prefix
  REQUIRE_FALSE(TokensEqual(token + "0", token));
  REQUIRE_FALSE(TokensEqual("", token));
  REQUIRE_FALSE(TokensEqual(std::string("0123456789abcdef0123456789abcde\0", 32), token));
}
