#include "daemon/agent/report_rate.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace clusterd {

ReportRate::ReportRate(const Clock* clock, int per_second, int burst, Micros max_hold)
    : clock_(clock), per_second_(per_second), burst_(std::max(burst, 1)), max_hold_(std::max<Micros>(max_hold, 0)) {}

Result<Micros> ReportRate::Take(const std::string& rank) {
  if (per_second_ <= 0) return Micros{0};
  const Micros now = clock_->NowMicros();
  std::lock_guard<std::mutex> lock(mutex_);
  ForgetFull(now);
  auto found = buckets_.find(rank);
  Bucket bucket = found == buckets_.end() ? Bucket{burst_, now} : found->second;
  bucket.tokens = std::min(burst_, bucket.tokens + static_cast<double>(now - bucket.at) * per_second_ / 1e6);
  bucket.at = now;
  // Once this report's token is taken the bucket holds tokens - 1; below
  // zero, the report waits until the refill has paid that back.
  const double owed = 1.0 - bucket.tokens;
  const Micros hold = owed <= 0 ? 0 : static_cast<Micros>(std::ceil(owed * 1e6 / per_second_));
  if (hold > max_hold_) {
    return Status::ResourceExhausted(
        fmt::format("this rank reports faster than report_rate_per_s allows ({} a second, bursts of {}): its report "
                    "would wait {} ms, more than the {} ms a report is held back; report less often",
                    per_second_, burst_, hold / 1000, max_hold_ / 1000));
  }
  bucket.tokens -= 1.0;
  buckets_[rank] = bucket;
  return hold;
}

void ReportRate::ForgetFull(Micros now) {
  if (now < next_sweep_) return;
  // Once a second at most: the walk is over every rank that reported lately.
  next_sweep_ = now + 1'000'000;
  for (auto it = buckets_.begin(); it != buckets_.end();) {
    const double tokens = it->second.tokens + static_cast<double>(now - it->second.at) * per_second_ / 1e6;
    it = tokens >= burst_ ? buckets_.erase(it) : std::next(it);
  }
}

size_t ReportRate::ranks_tracked() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return buckets_.size();
}

}  // namespace clusterd
