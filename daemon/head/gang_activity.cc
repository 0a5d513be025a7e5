#include "daemon/head/gang_activity.h"

#include <algorithm>
#include <cmath>

namespace clusterd {

int64_t IdleAfterMs(double hang_timeout_s) {
  if (!(hang_timeout_s > 0)) return 0;
  const double half_ms = std::min(hang_timeout_s, kMaxHangTimeoutS) * 500.0;
  return std::max<int64_t>(1, static_cast<int64_t>(std::llround(half_ms)));
}

std::optional<Micros> GangActivity::HungAt(int world_size, const std::set<int>& exited, Micros hang_timeout) const {
  std::optional<Micros> last_active;
  for (int rank = 0; rank < world_size; ++rank) {
    if (exited.count(rank)) continue;  // a rank that ended does nothing, and keeps nobody alive
    auto idle = idle_since_.find(rank);
    if (idle == idle_since_.end()) return std::nullopt;
    last_active = std::max(last_active.value_or(idle->second), idle->second);
  }
  if (!last_active) return std::nullopt;
  return *last_active + hang_timeout;
}

}  // namespace clusterd
