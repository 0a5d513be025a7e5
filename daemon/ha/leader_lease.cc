#include "daemon/ha/leader_lease.h"

namespace clusterd {

void LeaderLease::Acknowledged(Micros sent_at, int64_t ttl_s) {
  if (held_ && sent_at < last_sent_) return;
  held_ = true;
  last_sent_ = sent_at;
  ttl_ = ttl_s * 1'000'000;
}

}  // namespace clusterd
