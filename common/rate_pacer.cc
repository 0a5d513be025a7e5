#include "common/rate_pacer.h"

#include <algorithm>

namespace clusterd {

RatePacer::RatePacer(int64_t bytes_per_s, const WaitableClock* clock) : bytes_per_s_(bytes_per_s), clock_(clock) {}

Micros RatePacer::Take(int64_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  return TakeLocked(bytes, clock_->NowMicros());
}

Micros RatePacer::TakeLocked(int64_t bytes, Micros now) {
  if (lifted_ || bytes_per_s_ <= 0 || bytes <= 0) return 0;
  // After a stall, the time the stall lost is not owed back at full speed:
  // the schedule starts again at most a burst behind now.
  if (!started_ || due_ < now - kBurstMicros) due_ = now - (started_ ? kBurstMicros : 0);
  started_ = true;
  // In microseconds, rounded up; 64 bits hold 9e12 bytes' worth at 1 B/s.
  due_ += static_cast<Micros>((static_cast<__int128>(bytes) * 1'000'000 + bytes_per_s_ - 1) / bytes_per_s_);
  return std::max<Micros>(0, due_ - now);
}

void RatePacer::TakeAndWait(int64_t bytes) {
  std::unique_lock<std::mutex> lock(mutex_);
  const Micros now = clock_->NowMicros();
  const Micros wait = TakeLocked(bytes, now);
  if (wait <= 0) return;
  // Until a time on the clock's line, not for a span: a Take by another
  // thread meanwhile moves due_, not this wait's end.
  clock_->WaitUntil(lifted_cv_, lock, now + wait, [this] { return lifted_; });
}

void RatePacer::Lift() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    lifted_ = true;
  }
  lifted_cv_.notify_all();
}

bool RatePacer::lifted() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return lifted_;
}

}  // namespace clusterd
