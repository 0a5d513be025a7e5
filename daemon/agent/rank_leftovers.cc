#include "daemon/agent/rank_leftovers.h"

#include <algorithm>

#include "common/logging.h"

namespace clusterd {

void RankLeftovers::Add(const std::string& job_id, int attempt, Micros kill_at) {
  owed_.push_back({job_id, attempt, kill_at});
}

Micros RankLeftovers::KillDue(Micros now) {
  Micros next = 0;
  const bool may_have_leftovers = !owed_.empty() && launcher_->MayHaveLeftovers();
  for (auto it = owed_.begin(); it != owed_.end();) {
    if (it->kill_at > now && may_have_leftovers) {
      next = next == 0 ? it->kill_at : std::min(next, it->kill_at);
      ++it;
      continue;
    }
    // Asked once a tick, not again per attempt: the check reads /proc, and
    // every short job's exit comes here.
    int left = may_have_leftovers ? launcher_->KillLeftovers(it->job_id, it->attempt) : 0;
    if (left > 0) {
      LOG_INFO("job {} attempt {}: killed {} process(es) its ranks left behind outside their groups", it->job_id,
               it->attempt, left);
    }
    it = owed_.erase(it);
  }
  return next;
}

bool RankLeftovers::Holds(const std::string& job_id, int attempt) const {
  return std::any_of(owed_.begin(), owed_.end(),
                     [&](const Owed& owed) { return owed.job_id == job_id && owed.attempt == attempt; });
}

bool RankLeftovers::HoldsEarlier(const std::string& job_id, int attempt) const {
  return std::any_of(owed_.begin(), owed_.end(),
                     [&](const Owed& owed) { return owed.job_id == job_id && owed.attempt < attempt; });
}

}  // namespace clusterd
