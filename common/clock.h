// Time behind one seam, so that liveness and scheduling run in unit tests
// with a hand-advanced clock and no sleeps.
#pragma once

#include <chrono>
#include <cstdint>

namespace clusterd {

using Micros = int64_t;  // microseconds on a monotonic time line

class Clock {
 public:
  virtual ~Clock() = default;
  virtual Micros NowMicros() const = 0;      // monotonic, for deadlines
  virtual int64_t UnixMillis() const = 0;    // wall time, for display and records
};

class SystemClock : public Clock {
 public:
  Micros NowMicros() const override {
    return std::chrono::duration_cast<std::chrono::microseconds>(
               std::chrono::steady_clock::now().time_since_epoch()).count();
  }
  int64_t UnixMillis() const override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch()).count();
  }
};

// A clock that moves only when told. Not thread-safe: tests drive it from
// the one thread that also drives the code under test.
class FakeClock : public Clock {
 public:
  explicit FakeClock(Micros start = 1'000'000) : now_(start) {}
  Micros NowMicros() const override { return now_; }
  int64_t UnixMillis() const override { return 1'700'000'000'000 + now_ / 1000; }
  void Advance(Micros delta) { now_ += delta; }
  void AdvanceMillis(int64_t ms) { now_ += ms * 1000; }

 private:
  Micros now_;
};

}  // namespace clusterd
