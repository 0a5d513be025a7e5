#include "daemon/agent/rank_activity_watch.h"

#include <algorithm>

namespace clusterd {

void RankActivityWatch::Watch(const WatchRanks& watch, Micros now) {
  // At least a millisecond: an idle time of 0 would call every rank idle at once.
  const Micros idle_after = std::max<Micros>(1000, watch.idle_after_ms() * 1000);
  attempts_[{watch.job_id(), watch.attempt()}] = idle_after;
  for (auto& [key, watched] : ranks_) {
    if (std::get<0>(key) != watch.job_id() || std::get<1>(key) != watch.attempt()) continue;
    watched.idle_after = idle_after;
    watched.last_active = now;
  }
}

void RankActivityWatch::Started(const std::string& job_id, int attempt, int rank, pid_t pid, Micros now) {
  auto watch = attempts_.find({job_id, attempt});
  if (watch == attempts_.end()) return;
  Watched& watched = ranks_[{job_id, attempt, rank}];
  watched.pid = pid;
  watched.idle_after = watch->second;
  watched.last_active = now;
}

void RankActivityWatch::MarkActive(Watched& watched, Micros now) {
  watched.last_active = std::max(watched.last_active, now);
  if (watched.idle) {
    watched.idle = false;
    watched.told = false;
  }
}

void RankActivityWatch::Touched(const std::string& job_id, int attempt, int rank, Micros now) {
  auto it = ranks_.find({job_id, attempt, rank});
  if (it != ranks_.end()) MarkActive(it->second, now);
}

void RankActivityWatch::Ended(const std::string& job_id, int attempt, int rank) {
  ranks_.erase({job_id, attempt, rank});
}

void RankActivityWatch::EndAttempt(const std::string& job_id, int attempt) {
  attempts_.erase({job_id, attempt});
  for (auto it = ranks_.begin(); it != ranks_.end();) {
    if (std::get<0>(it->first) == job_id && std::get<1>(it->first) == attempt) {
      it = ranks_.erase(it);
    } else {
      ++it;
    }
  }
}

std::vector<pid_t> RankActivityWatch::Pids() const {
  std::vector<pid_t> pids;
  pids.reserve(ranks_.size());
  for (const auto& [key, watched] : ranks_) pids.push_back(watched.pid);
  return pids;
}

void RankActivityWatch::TakeCpu(const std::map<pid_t, int64_t>& cpu_ticks, Micros now) {
  for (auto& [key, watched] : ranks_) {
    auto reading = cpu_ticks.find(watched.pid);
    if (reading == cpu_ticks.end()) continue;
    // Changed, not grown: a child that exits unreaped takes its time out
    // of the sum, and that is activity too.
    if (watched.cpu_ticks && *watched.cpu_ticks != reading->second) MarkActive(watched, now);
    watched.cpu_ticks = reading->second;
  }
}

void RankActivityWatch::Report(Micros now, const std::function<bool(const AgentMessage&)>& send) {
  for (auto& [key, watched] : ranks_) {
    const Micros quiet = now - watched.last_active;
    if (!watched.idle && quiet >= watched.idle_after) {
      watched.idle = true;
      watched.told = false;
    }
    if (watched.told) continue;
    AgentMessage message;
    RankActivity* activity = message.mutable_rank_activity();
    activity->set_job_id(std::get<0>(key));
    activity->set_attempt(std::get<1>(key));
    activity->set_rank(std::get<2>(key));
    activity->set_idle(watched.idle);
    if (watched.idle) activity->set_idle_for_ms(quiet / 1000);
    watched.told = send(message);
  }
}

void RankActivityWatch::RetellIdle() {
  for (auto& [key, watched] : ranks_) {
    if (watched.idle) watched.told = false;
  }
}

Micros RankActivityWatch::NextDue() const {
  Micros next = 0;
  for (const auto& [key, watched] : ranks_) {
    if (watched.idle && watched.told) continue;
    // One to tell that is not yet told is due at once (1: long past; 0 means none).
    const Micros due = watched.idle ? 1 : watched.last_active + watched.idle_after;
    if (next == 0 || due < next) next = due;
  }
  return next;
}

}  // namespace clusterd
