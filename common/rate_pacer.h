// Spreads a transfer over time so that it moves at most a given number of
// bytes a second: a checkpoint upload paced this way leaves the cores to
// training (bench/checkpoints: at full speed its sending, the store's
// receiving and the kernel's TCP work take a core or more for seconds and
// preempt the rank; at 100 MiB/s the same work is spread thin enough that
// the idle cores absorb it). A stall (the network, a slow disk) is not made
// up for in a burst: at most kBurstMicros worth of bytes go unpaced after
// one. It waits on its clock's time, so that a test moves the pace by hand.
// Lift() ends all waiting from another thread, for when nothing is left to
// protect (the trainer exited, the agent stops). Thread-safe.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>

#include "common/waitable_clock.h"

namespace clusterd {

class RatePacer {
 public:
  // Fixed: the rate is what is set (a job's checkpoint.upload_rate); a
  // tenth of a second's worth is the most a stall catches up unpaced,
  // small next to the seconds a checkpoint takes.
  static constexpr Micros kBurstMicros = 100'000;

  // `bytes_per_s` <= 0: no pacing. `clock`: what it reads time from and
  // waits on; REQUIRES: outlives the pacer.
  RatePacer(int64_t bytes_per_s, const WaitableClock* clock);

  // Counts `bytes` more as moved and returns how long to wait, from now,
  // before moving more (0: on time).
  Micros Take(int64_t bytes);
  // Take, then waits until the clock reaches the time it is due, or until
  // Lift.
  void TakeAndWait(int64_t bytes);
  void Lift();
  bool lifted() const;

 private:
  // Take at `now`. REQUIRES: mutex_ held.
  Micros TakeLocked(int64_t bytes, Micros now);

  const int64_t bytes_per_s_;
  const WaitableClock* clock_;
  mutable std::mutex mutex_;
  std::condition_variable lifted_cv_;
  bool lifted_ = false;
  bool started_ = false;
  Micros due_ = 0;  // when what was taken so far may have moved at the rate
};

}  // namespace clusterd
