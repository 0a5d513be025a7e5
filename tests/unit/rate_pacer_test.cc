// common/rate_pacer.h: the waits it asks for, and that it waits them out on
// its clock (a hand-moved one here) or until Lift.
#include <catch2/catch.hpp>

#include <atomic>
#include <functional>
#include <thread>

#include "common/rate_pacer.h"
#include "eventually.h"
#include "fake_waitable_clock.h"

using namespace clusterd;
using namespace clusterd::testing;

namespace {

// Runs `wait` (which waits on `clock`) on a thread of its own; on the way
// out, even from a failed REQUIRE, the clock is moved a day on so that the
// thread ends and is joined.
class Waiter {
 public:
  Waiter(FakeWaitableClock& clock, std::function<void()> wait)
      : clock_(clock), thread_([this, wait = std::move(wait)] {
          wait();
          returned_ = true;
        }) {}
  ~Waiter() {
    clock_.Advance(Micros{86'400} * 1'000'000);
    thread_.join();
  }
  bool returned() const { return returned_; }

 private:
  FakeWaitableClock& clock_;
  std::atomic<bool> returned_{false};
  std::thread thread_;
};

}  // namespace

TEST_CASE("a pacer asks for the wait that keeps bytes to its rate", "[rate_pacer]") {
  FakeWaitableClock clock;
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
  FakeWaitableClock clock;
  RatePacer pacer(1'000'000, &clock);
  CHECK(pacer.Take(1'000) == 1'000);
  clock.Advance(60'000'000);  // a minute with the network down
  CHECK(pacer.Take(RatePacer::kBurstMicros) == 0);
  CHECK(pacer.Take(1'000'000) == 1'000'000);  // not a minute's worth at full speed
}

TEST_CASE("a pacer with no rate or lifted never asks for a wait", "[rate_pacer]") {
  FakeWaitableClock clock;
  RatePacer none(0, &clock);
  CHECK(none.Take(int64_t{1} << 40) == 0);
  RatePacer slow(1, &clock);  // a byte a second
  CHECK(slow.Take(int64_t{1} << 40) == (int64_t{1} << 40) * 1'000'000);  // no overflow
  slow.Lift();
  CHECK(slow.lifted());
  CHECK(slow.Take(1) == 0);
}

TEST_CASE("a pacer waits on its clock until what it took is due", "[rate_pacer]") {
  FakeWaitableClock clock;
  RatePacer pacer(1'000'000, &clock);
  const Micros start = clock.NowMicros();
  Waiter waiter(clock, [&] {
    pacer.TakeAndWait(250'000);
    pacer.TakeAndWait(250'000);
  });
  // Each wait ends when the clock reaches what is due so far, no sooner.
  REQUIRE(Eventually([&] { return clock.SomeoneWaitsUntil(start + 250'000); }));
  clock.Advance(250'000);
  REQUIRE(Eventually([&] { return clock.SomeoneWaitsUntil(start + 500'000); }));
  CHECK_FALSE(waiter.returned());
  clock.Advance(250'000);
  CHECK(Eventually([&] { return waiter.returned(); }));
}

TEST_CASE("lifting a pacer ends a wait under way", "[rate_pacer]") {
  FakeWaitableClock clock;
  RatePacer pacer(1, &clock);
  const Micros start = clock.NowMicros();
  Waiter waiter(clock, [&] { pacer.TakeAndWait(3600); });  // an hour's worth
  REQUIRE(Eventually([&] { return clock.SomeoneWaitsUntil(start + Micros{3600} * 1'000'000); }));
  pacer.Lift();
  // The clock stands still: only Lift can end the wait.
  CHECK(Eventually([&] { return waiter.returned(); }));
}
