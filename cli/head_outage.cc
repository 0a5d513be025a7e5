#include "cli/head_outage.h"

#include <iostream>

namespace clusterd::cli {

bool HeadOutage::TryAgain(const Status& status) {
  if (status.code() != Status::Code::kUnavailable || limit_.count() == 0) return false;
  const auto now = std::chrono::steady_clock::now();
  if (!failing_) {
    failing_ = true;
    since_ = now;
    std::cerr << "clusterctl: " << status.message() << "; trying again for " << limit_.count() / 1000 << " s\n";
    return true;
  }
  return now - since_ <= limit_;
}

}  // namespace clusterd::cli
