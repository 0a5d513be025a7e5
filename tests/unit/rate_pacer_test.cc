// common/rate_pacer.h: the waits it asks for, on a hand-moved clock, and
// that Lift ends a real wait.
#include <catch2/catch.hpp>

#include <chrono>
#include <thread>

#include "common/rate_pacer.h"

using namespace clusterd;

TEST_CASE("a pacer asks for the wait that keeps bytes to its rate", "[rate_pacer]") {
  FakeClock clock;
  RatePacer pacer(1'000'000, &clock);  // 1 MB/s: a byte a microsecond
  CHECK(pacer.Take(250'000) == 250'000);
  CHECK(pacer.Take(250'000) == 500'000);  // moved at once: owes both
  clock.Advance(500'000);
  CHECK(pacer.Take(0) == 0);
  CHECK(pacer.Take(100'000) == 100'000);
  clock.Advance(400'000);                 // 300 ms slower than the rate, but
  CHECK(pacer.Take(100'000) == 0);        // only kBurstMicros of it is made up
  CHECK(pacer.Take(100'000) == 100'000);  // at full speed
}

TEST_CASE("a pacer after a stall lets only a burst go unpaced", "[rate_pacer]") {
  FakeClock clock;
  RatePacer pacer(1'000'000, &clock);
  CHECK(pacer.Take(1'000) == 1'000);
  clock.Advance(60'000'000);  // a minute with the network down
  CHECK(pacer.Take(RatePacer::kBurstMicros) == 0);
  CHECK(pacer.Take(1'000'000) == 1'000'000);  // not a minute's worth at full speed
}

TEST_CASE("a pacer with no rate or lifted never asks for a wait", "[rate_pacer]") {
  FakeClock clock;
  RatePacer none(0, &clock);
  CHECK(none.Take(int64_t{1} << 40) == 0);
  RatePacer slow(1, &clock);  // a byte a second
  CHECK(slow.Take(int64_t{1} << 40) == (int64_t{1} << 40) * 1'000'000);  // no overflow
  slow.Lift();
  CHECK(slow.lifted());
  CHECK(slow.Take(1) == 0);
}

TEST_CASE("lifting a pacer ends a wait under way", "[rate_pacer]") {
  SystemClock clock;
  RatePacer pacer(1, &clock);
  const auto start = std::chrono::steady_clock::now();
  std::thread waiter([&] { pacer.TakeAndWait(3600); });  // an hour's worth
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  pacer.Lift();
  waiter.join();
  // An outer bound for a loaded machine; without Lift it would be an hour.
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(30));
}
