#include "daemon/agent/rank_launch_gate.h"

#include <algorithm>

namespace clusterd {

void RankLaunchGate::Expect(const LaunchRanks& launch) { pending_[KeyOf(launch)] = false; }

RankLaunchGate::Ready RankLaunchGate::Prepared(const LaunchRanks& launch,
                                               const EarlierAttemptHereFn& earlier_attempt_here) {
  auto it = pending_.find(KeyOf(launch));
  if (it != pending_.end() && it->second) {
    pending_.erase(it);
    return Ready::kCancelled;
  }
  if (earlier_attempt_here(launch)) {
    // An attempt placed here while the one before is still being stopped
    // (its grace, or a node cut off and back) would run beside it, both in
    // the job's folder: it starts once they are gone.
    if (it == pending_.end()) pending_[KeyOf(launch)] = false;
    waiting_.push_back(launch);
    return Ready::kWaits;
  }
  if (it != pending_.end()) pending_.erase(it);
  return Ready::kStart;
}

void RankLaunchGate::Failed(const LaunchRanks& launch) { pending_.erase(KeyOf(launch)); }

void RankLaunchGate::Cancel(const std::string& job_id, int attempt) {
  auto pending = pending_.find({job_id, attempt});
  if (pending != pending_.end()) pending->second = true;
}

void RankLaunchGate::CancelAll() {
  for (auto& [key, cancelled] : pending_) cancelled = true;
}

void RankLaunchGate::ReleaseDue(const EarlierAttemptHereFn& earlier_attempt_here,
                                const std::function<void(const LaunchRanks&, bool cancelled)>& release) {
  for (size_t i = 0; i < waiting_.size();) {
    auto pending = pending_.find(KeyOf(waiting_[i]));
    const bool cancelled = pending == pending_.end() || pending->second;
    if (!cancelled && earlier_attempt_here(waiting_[i])) {
      ++i;
      continue;
    }
    if (pending != pending_.end()) pending_.erase(pending);
    const LaunchRanks launch = std::move(waiting_[i]);
    waiting_.erase(waiting_.begin() + static_cast<std::ptrdiff_t>(i));
    release(launch, cancelled);
  }
}

bool RankLaunchGate::Holds(const std::string& job_id, int attempt) const {
  return pending_.count({job_id, attempt}) > 0 ||
         std::any_of(waiting_.begin(), waiting_.end(), [&](const LaunchRanks& launch) {
           return launch.job_id() == job_id && launch.attempt() == attempt;
         });
}

}  // namespace clusterd
