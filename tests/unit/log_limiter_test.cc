// How often one kind of log line is written (common/logs/log_limiter.h), on
// fake times.
#include <catch2/catch.hpp>

#include "common/logs/log_limiter.h"

using namespace clusterd;

TEST_CASE("a log limiter lets a burst through each window and counts the rest onto the next line", "[logging]") {
  LogLimiter limiter(3, 10'000'000);
  int64_t held_back = -1;
  for (int i = 0; i < 3; ++i) {
    REQUIRE(limiter.Allow(1'000'000 + i, &held_back));
    REQUIRE(held_back == 0);
  }
  for (int i = 0; i < 1000; ++i) REQUIRE_FALSE(limiter.Allow(2'000'000 + i, &held_back));
  REQUIRE_FALSE(limiter.Allow(10'999'999, &held_back));  // still the first window
  REQUIRE(limiter.Allow(11'000'000, &held_back));
  REQUIRE(held_back == 1001);
  REQUIRE(limiter.Allow(11'000'001, &held_back));
  REQUIRE(held_back == 0);
}
