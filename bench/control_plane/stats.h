// Latency samples in milliseconds and the order statistics the table shows.
#pragma once

#include <chrono>
#include <vector>

namespace clusterd::bench {

class Samples {
 public:
  void Add(double ms) { values_.push_back(ms); }
  size_t size() const { return values_.size(); }
  bool empty() const { return values_.empty(); }
  // Nearest-rank percentiles: with 20 samples p99 is the largest, which is
  // what a reader of a 20-trial table expects.
  double Percentile(double p) const;
  double Median() const { return Percentile(50); }
  double P99() const { return Percentile(99); }
  double Min() const;
  double Max() const;

 private:
  std::vector<double> values_;
};

// Milliseconds (fractional) since `start` on the monotonic clock.
double MsSince(std::chrono::steady_clock::time_point start);

}  // namespace clusterd::bench
