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
#include <optional>
#include <vector>

#include "common/waitable_clock.h"
#include "eventually.h"

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

  // Moves this clock to each deadline a thread waits for, soonest first,
  // until `done` holds. False if, within `limit` of real time, neither
  // `done` holds nor a thread waits for a time still ahead: real time only
  // bounds the work the threads do between waits, never what the clock
  // measures. Time moves only to a deadline, so that a test can assert
  // exactly how much of it the work needed.
  bool AdvanceThroughWaitsUntil(const std::function<bool()>& done,
                                std::chrono::milliseconds limit = std::chrono::seconds(20)) {
    while (true) {
      std::optional<Micros> next;
      const bool moved_on = Eventually(
          [&] {
            if (done()) return true;
            next = SoonestWaitAhead();
            return next.has_value();
          },
          limit);
      if (!moved_on) return false;
      if (done()) return true;
      now_.store(*next);
    }
  }

 private:
  // The soonest deadline waited for that this clock has not reached yet.
  std::optional<Micros> SoonestWaitAhead() const {
    const Micros now = now_.load();
    std::lock_guard<std::mutex> lock(waiters_mutex_);
    std::optional<Micros> soonest;
    for (Micros deadline : waiting_until_) {
      if (deadline > now && (!soonest || deadline < *soonest)) soonest = deadline;
    }
    return soonest;
  }

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
