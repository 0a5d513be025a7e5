#include "stats.h"

#include <algorithm>
#include <cmath>

namespace clusterd::bench {

double Samples::Percentile(double p) const {
  if (values_.empty()) return 0;
  std::vector<double> sorted = values_;
  std::sort(sorted.begin(), sorted.end());
  size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(sorted.size())));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

double Samples::Min() const { return values_.empty() ? 0 : *std::min_element(values_.begin(), values_.end()); }
double Samples::Max() const { return values_.empty() ? 0 : *std::max_element(values_.begin(), values_.end()); }

double MsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace clusterd::bench
