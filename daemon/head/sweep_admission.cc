#include "daemon/head/sweep_admission.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace clusterd {

int GangsThatFit(const std::vector<NodeInfo>& nodes, const ResourceSet& per_worker, int num_workers) {
  if (num_workers <= 0) return 0;
  long workers = 0;
  for (const NodeInfo& node : nodes) {
    if (node.state() != ALIVE) continue;
    double fit = std::numeric_limits<double>::infinity();
    for (const auto& [name, amount] : per_worker.amounts()) {
      if (amount <= 0) continue;
      auto it = node.total().amounts().find(name);
      const double have = it == node.total().amounts().end() ? 0 : it->second;
      fit = std::min(fit, std::floor(have / amount + 1e-9));
    }
    if (std::isinf(fit)) fit = 64;  // a worker that asks for nothing: bound it anyway
    workers += static_cast<long>(fit);
  }
  return static_cast<int>(workers / num_workers);
}

int AdmissionLimit(int max_concurrent, int gangs_that_fit) {
  return max_concurrent > 0 ? max_concurrent : std::max(1, gangs_that_fit);
}

std::vector<int> TrialsToAdmit(const std::vector<TrialState>& states, int limit) {
  int active = static_cast<int>(std::count(states.begin(), states.end(), TRIAL_ACTIVE));
  std::vector<int> admit;
  for (size_t i = 0; i < states.size() && active < limit; ++i) {
    if (states[i] != TRIAL_WAITING) continue;
    admit.push_back(static_cast<int>(i));
    ++active;
  }
  return admit;
}

}  // namespace clusterd
