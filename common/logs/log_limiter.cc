#include "common/logs/log_limiter.h"

namespace clusterd {

bool LogLimiter::Allow(Micros now, int64_t* held_back) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (window_start_ < 0 || now - window_start_ >= window_) {
    window_start_ = now;
    written_ = 0;
  }
  if (written_ >= burst_) {
    ++held_back_;
    return false;
  }
  ++written_;
  *held_back = held_back_;
  held_back_ = 0;
  return true;
}

}  // namespace clusterd
