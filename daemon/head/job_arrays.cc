// Arrays: one submit makes `array.count` jobs, each told its index
// (CLUSTER_ARRAY_INDEX), at most `array.max_concurrent` of them running at
// once, as Slurm's --array=0-N%M. A job of a full array waits aside,
// PENDING with the reason, rather than at the head of the queue, so that
// other jobs go on past it (Slurm's JobArrayTaskLimit).
#include <algorithm>

#include <fmt/format.h>

#include "common/logging.h"
#include "daemon/head/job_manager.h"

namespace clusterd {

Result<std::string> JobManager::SubmitArray(const SubmitJobRequest& request) {
  JobSpec spec = request.spec();
  std::string array_id;
  const int count = spec.array().count();
  for (int i = 0; i < count; ++i) {
    spec.set_array_index(i);
    auto made = Create(request, spec);
    if (!made.ok()) {
      Schedule();  // those made before this still run
      if (i == 0) return made.status();
      // Those made are journalled and stay; say so rather than hide them.
      return made.status().WithContext(fmt::format(
          "array {}: {} of its {} jobs were made before this (stop them with clusterctl stop {})", array_id, i,
          count, array_id));
    }
    if (i == 0) {
      array_id = *made;  // Create named the array after its first job
      spec.set_array_id(array_id);
    }
  }
  LOG_INFO("array {} ({}): {} jobs, at most {} at once", array_id, spec.name(), count,
           spec.array().max_concurrent() > 0 ? std::to_string(spec.array().max_concurrent()) : "all");
  Schedule();
  return array_id;
}

void JobManager::SetActive(Job& job, bool active) {
  if (job.active == active) return;
  job.active = active;
  const std::string& array_id = job.info.spec().array_id();
  if (array_id.empty()) return;
  int& running = array_running_[array_id];
  running += active ? 1 : -1;
  if (active) return;
  if (running <= 0) array_running_.erase(array_id);
  // One ended: the array's first job still waiting goes back to the
  // queue's front (one stopped meanwhile must not take the freed place).
  auto parked = array_parked_.find(array_id);
  if (parked == array_parked_.end()) return;
  std::deque<std::string>& waiting = parked->second;
  while (!waiting.empty()) {
    const Job* next = Find(waiting.front());
    const bool still_waiting = next && (next->info.state() == PENDING || next->info.state() == RESTARTING);
    if (still_waiting) queue_.push_front(waiting.front());
    waiting.pop_front();
    if (still_waiting) break;
  }
  if (waiting.empty()) array_parked_.erase(parked);
}

void JobManager::TallyArrayJob(const Job& job, JobState state, int delta) {
  const std::string& array_id = job.info.spec().array_id();
  if (array_id.empty()) return;
  ArrayTally& tally = array_tallies_[array_id];
  tally.first_seq = std::min(tally.first_seq, job.seq);
  tally.last_seq = std::max(tally.last_seq, job.seq);
  int& count = tally.by_state[state];
  count += delta;
  if (count <= 0) tally.by_state.erase(state);
  if (tally.by_state.empty()) array_tallies_.erase(array_id);
}

bool JobManager::ArrayRuns(const std::string& array_id) const {
  auto tally = array_tallies_.find(array_id);
  if (tally == array_tallies_.end()) return false;
  for (const auto& [state, count] : tally->second.by_state) {
    if (!IsTerminal(state)) return true;
  }
  return false;
}

Result<std::vector<std::string>> JobManager::ArrayJobs(const std::string& array_id) const {
  auto tally = array_tallies_.find(array_id);
  if (tally == array_tallies_.end()) {
    if (Find(array_id)) return Status::NotFound(fmt::format("job {} is not an array (array: in its job file)", array_id));
    return Status::NotFound(fmt::format("no array '{}'", array_id));
  }
  std::vector<std::string> ids;
  // An array's jobs are made by one call: neighbours in order_.
  for (auto it = FirstFrom(tally->second.first_seq); it != order_.end(); ++it) {
    const Job& job = jobs_.at(*it);
    if (job.seq > tally->second.last_seq) break;
    if (job.info.spec().array_id() == array_id) ids.push_back(*it);
  }
  return ids;
}

Result<JobInfo> JobManager::StopArray(const std::string& array_id) {
  ASSIGN_OR_RETURN(std::vector<std::string> ids, ArrayJobs(array_id));
  // Those not started first: a running one stopped frees its place, which
  // one still waiting would otherwise take.
  std::stable_partition(ids.begin(), ids.end(), [this](const std::string& id) { return !Find(id)->active; });
  int stopped = 0, ended = 0;
  for (const std::string& id : ids) {
    if (IsTerminal(Find(id)->info.state())) {
      ++ended;
      continue;
    }
    auto done = Stop(id, "stopped with its array by clusterctl stop --array");
    if (!done.ok()) {
      return done.status().WithContext(fmt::format("array {}: {} of its jobs were stopped before this", array_id,
                                                   stopped));
    }
    ++stopped;
  }
  JobInfo summary;
  summary.set_job_id(array_id);
  summary.set_state(STOPPED);
  summary.set_reason(fmt::format("stopping {} of its {} jobs; {} had ended", stopped, ids.size(), ended));
  return summary;
}

Result<JobInfo> JobManager::DeleteArray(const std::string& array_id) {
  ASSIGN_OR_RETURN(std::vector<std::string> ids, ArrayJobs(array_id));
  const auto going = std::count_if(ids.begin(), ids.end(), [this](const std::string& id) {
    return !IsTerminal(Find(id)->info.state());
  });
  if (going > 0) {
    return Status::FailedPrecondition(fmt::format("array {} has {} of its {} jobs not finished: stop them first "
                                                  "(`clusterctl stop --array {}`)", array_id, going, ids.size(),
                                                  array_id));
  }
  int deleted = 0;
  for (const std::string& id : ids) {
    auto done = Delete(id);
    if (!done.ok()) {
      return done.status().WithContext(fmt::format("array {}: {} of its jobs were deleted before this", array_id,
                                                   deleted));
    }
    ++deleted;
  }
  JobInfo summary;
  summary.set_job_id(array_id);
  summary.set_state(STOPPED);
  summary.set_reason(fmt::format("deleted its {} jobs with their stored data and logs", deleted));
  return summary;
}

bool JobManager::ParkedByArrayLimit(Job& job) {
  const JobSpec& spec = job.info.spec();
  const int limit = spec.array().max_concurrent();
  if (spec.array_id().empty() || limit <= 0 || job.active) return false;
  auto running = array_running_.find(spec.array_id());
  if (running == array_running_.end() || running->second < limit) return false;
  std::string reason = fmt::format("waiting: array {} runs at most {} of its jobs at once (max_concurrent)",
                                   spec.array_id(), limit);
  if (job.info.reason() != reason) SetState(job, job.info.state() == RESTARTING ? RESTARTING : PENDING, reason);
  array_parked_[spec.array_id()].push_back(job.info.job_id());
  return true;
}

}  // namespace clusterd
