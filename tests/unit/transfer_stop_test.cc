// StopTransfersWithin alone, on a fake clock: transfers that end by
// themselves are never cancelled, and ones that hang are cancelled at the
// grace period's end, not a millisecond before, which lets the stop return.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include "daemon/agent/transfer_stop.h"
#include "fake_waitable_clock.h"

using namespace clusterd;
using namespace clusterd::testing;

TEST_CASE("transfers that end within the grace are not cancelled", "[transfer_stop]") {
  FakeWaitableClock clock;
  bool stopped = false;
  int cancels = 0;
  CHECK_FALSE(StopTransfersWithin(3000, &clock, [&] { stopped = true; }, [&] { ++cancels; }));
  CHECK(stopped);
  CHECK(cancels == 0);
}

TEST_CASE("transfers still under way at the grace's end are cancelled, and the stop then returns",
          "[transfer_stop]") {
  FakeWaitableClock clock;
  const Micros deadline = clock.NowMicros() + 3000 * 1000;
  std::atomic<bool> cancelled{false};
  std::atomic<int> cancels{0};
  auto stopping = std::async(std::launch::async, [&] {
    return StopTransfersWithin(
        3000, &clock,
        [&] {
          // A store call against a head that does not answer: over only once cancelled.
          while (!cancelled) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        },
        [&] {
          ++cancels;
          cancelled = true;
        });
  });
  auto waits_for = [&](Micros when) {
    for (int i = 0; i < 5000 && !clock.SomeoneWaitsUntil(when); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return clock.SomeoneWaitsUntil(when);
  };
  REQUIRE(waits_for(deadline));
  clock.Advance(3000 * 1000 - 1000);  // a millisecond short
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK(cancels == 0);
  CHECK(stopping.wait_for(std::chrono::milliseconds(0)) == std::future_status::timeout);
  clock.Advance(1000);
  REQUIRE(stopping.wait_for(std::chrono::seconds(30)) == std::future_status::ready);
  CHECK(stopping.get());
  CHECK(cancels == 1);
}
