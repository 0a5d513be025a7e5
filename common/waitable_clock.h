// A Clock (common/clock.h) that threads can also wait on. The node agent's
// link to the head, its uploader and its rank runner, and the rate pacer its
// uploads go through (common/rate_pacer.h), read time and wait for it only
// through this seam, so that unit tests move time by hand
// (tests/unit/fake_waitable_clock.h) and never sleep for it to pass.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>

#include "common/clock.h"

namespace clusterd {

class WaitableClock : public Clock {
 public:
  // Waits on `cv` (with `lock` held, as condition_variable::wait does)
  // until `done` holds or this clock reaches `deadline` (NowMicros' time
  // line); returns done().
  virtual bool WaitUntil(std::condition_variable& cv, std::unique_lock<std::mutex>& lock, Micros deadline,
                         const std::function<bool()>& done) const = 0;

  bool WaitFor(std::condition_variable& cv, std::unique_lock<std::mutex>& lock, Micros wait,
               const std::function<bool()>& done) const {
    return WaitUntil(cv, lock, NowMicros() + wait, done);
  }
  bool WaitForMillis(std::condition_variable& cv, std::unique_lock<std::mutex>& lock, int64_t wait_ms,
                     const std::function<bool()>& done) const {
    return WaitFor(cv, lock, wait_ms * 1000, done);
  }
};

// The machine's monotonic clock (SystemClock's), waited on by the condition
// variable itself.
class SystemWaitableClock : public WaitableClock {
 public:
  Micros NowMicros() const override { return system_.NowMicros(); }
  int64_t UnixMillis() const override { return system_.UnixMillis(); }
  bool WaitUntil(std::condition_variable& cv, std::unique_lock<std::mutex>& lock, Micros deadline,
                 const std::function<bool()>& done) const override {
    // SystemClock counts steady_clock's microseconds since its epoch.
    const std::chrono::steady_clock::time_point until{std::chrono::microseconds(deadline)};
    return cv.wait_until(lock, until, done);
  }

  // One for whoever was given no clock.
  static const SystemWaitableClock* Shared() {
    static const SystemWaitableClock clock;
    return &clock;
  }

 private:
  SystemClock system_;
};

}  // namespace clusterd
