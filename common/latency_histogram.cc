#include "common/latency_histogram.h"

#include <algorithm>

namespace clusterd {

void LatencyHistogram::Observe(const std::string& name, double seconds) {
  size_t bucket = static_cast<size_t>(std::lower_bound(kBounds.begin(), kBounds.end(), seconds) - kBounds.begin());
  std::lock_guard<std::mutex> lock(mutex_);
  Series& series = series_[name];
  if (bucket < kBounds.size()) ++series.buckets[bucket];
  ++series.count;
  series.sum += seconds;
}

std::map<std::string, LatencyHistogram::Series> LatencyHistogram::Snapshot() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return series_;
}

LatencyHistogram& RpcLatency() {
  static LatencyHistogram* histogram = new LatencyHistogram();  // never destroyed: gRPC threads may outlive main
  return *histogram;
}

}  // namespace clusterd
