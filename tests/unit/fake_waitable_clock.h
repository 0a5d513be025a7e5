// A WaitableClock (common/waitable_clock.h) that moves only when the
// test says: the agent's threads wait on it for its time, never the
// machine's. Thread-safe, unlike FakeClock, since the code under test waits
// on it from threads of its own. A waiter looks at the time again every
// millisecond of real time, so that no Advance is missed for want of a
// notify; what it waits for is this clock's time alone.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <vector>

#include "common/waitable_clock.h"

namespace clusterd::testing {

class FakeWaitableClock : public WaitableClock {
 public:
  explicit FakeWaitableClock(Micros start = 1'000'000) : now_(start) {}

  Micros NowMicros() const override { return now_.load(); }
  int64_t UnixMillis() const override { return 1'700'000'000'000 + now_.load() / 1000; }
  void Advance(Micros delta) { now_ += delta; }
  void AdvanceMillis(int64_t ms) { now_ += ms * 1000; }

  bool WaitUntil(std::condition_variable& cv, std::unique_lock<std::mutex>& lock, Micros deadline,
                 const std::function<bool()>& done) const override {
    Register(deadline);
    while (!done() && now_.load() < deadline) cv.wait_for(lock, std::chrono::milliseconds(1));
    Unregister(deadline);
    return done();
  }

  // Whether some thread waits now for this clock to reach `deadline`.
  bool SomeoneWaitsUntil(Micros deadline) const {
    std::lock_guard<std::mutex> lock(waiters_mutex_);
    return std::find(waiting_until_.begin(), waiting_until_.end(), deadline) != waiting_until_.end();
  }
  // The deadlines waited for now, soonest first.
  std::vector<Micros> Waiting() const {
    std::lock_guard<std::mutex> lock(waiters_mutex_);
    std::vector<Micros> sorted = waiting_until_;
    std::sort(sorted.begin(), sorted.end());
    return sorted;
  }

 private:
  void Register(Micros deadline) const {
    std::lock_guard<std::mutex> lock(waiters_mutex_);
    waiting_until_.push_back(deadline);
  }
  void Unregister(Micros deadline) const {
    std::lock_guard<std::mutex> lock(waiters_mutex_);
    auto it = std::find(waiting_until_.begin(), waiting_until_.end(), deadline);
    if (it != waiting_until_.end()) waiting_until_.erase(it);
  }

  std::atomic<Micros> now_;
  mutable std::mutex waiters_mutex_;
  mutable std::vector<Micros> waiting_until_;
};

}  // namespace clusterd::testing
