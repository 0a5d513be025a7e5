// How a following command (`submit --follow`, `logs -f`, an array's or a
// sweep's follow) rides out a head it cannot reach for a while, as during a
// head restart: calls that fail as out of reach are tried again up to a
// limit (the config table's follow_outage_ms), said once on stderr.
#pragma once

#include <chrono>
#include <cstdint>

#include "common/status.h"

namespace clusterd::cli {

class HeadOutage {
 public:
  explicit HeadOutage(int64_t limit_ms) : limit_(limit_ms) {}
  // After a failed call: true while trying again is worth it (the head is
  // out of reach, within the limit since the first failure of this outage).
  bool TryAgain(const Status& status);
  // After a call that worked: a later failure starts a new outage.
  void Over() { failing_ = false; }

 private:
  const std::chrono::milliseconds limit_;
  bool failing_ = false;
  std::chrono::steady_clock::time_point since_;
};

}  // namespace clusterd::cli
