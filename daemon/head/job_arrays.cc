#include "daemon/head/job_arrays.h"

#include <algorithm>

#include <fmt/format.h>

namespace clusterd {

void JobArrays::OnStateChanged(TrackedJob& job, JobState from) {
  if (from == job.info.state()) return;
  Count(job, from, -1);
  Count(job, job.info.state(), 1);
}

void JobArrays::SetActive(TrackedJob& job, bool active) {
  if (job.active == active) return;
  job.active = active;
  const std::string& array_id = job.info.spec().array_id();
  if (array_id.empty()) return;
  int& running = running_[array_id];
  running += active ? 1 : -1;
  if (active) return;
  if (running <= 0) running_.erase(array_id);
  // One ended: the array's first job still waiting goes back to the
  // queue's front (one stopped meanwhile must not take the freed place).
  auto parked = parked_.find(array_id);
  if (parked == parked_.end()) return;
  std::deque<std::string>& waiting = parked->second;
  while (!waiting.empty()) {
    const TrackedJob* next = table_->Find(waiting.front());
    const bool still_waiting = next && (next->info.state() == PENDING || next->info.state() == RESTARTING);
    if (still_waiting) table_->queue().push_front(waiting.front());
    waiting.pop_front();
    if (still_waiting) break;
  }
  if (waiting.empty()) parked_.erase(parked);
}

void JobArrays::Count(const TrackedJob& job, JobState state, int delta) {
  const std::string& array_id = job.info.spec().array_id();
  if (array_id.empty()) return;
  Tally& tally = tallies_[array_id];
  tally.first_seq = std::min(tally.first_seq, job.seq);
  tally.last_seq = std::max(tally.last_seq, job.seq);
  int& count = tally.by_state[state];
  count += delta;
  if (count <= 0) tally.by_state.erase(state);
  if (tally.by_state.empty()) tallies_.erase(array_id);
}

bool JobArrays::Runs(const std::string& array_id) const {
  auto tally = tallies_.find(array_id);
  if (tally == tallies_.end()) return false;
  for (const auto& [state, count] : tally->second.by_state) {
    if (!IsTerminal(state)) return true;
  }
  return false;
}

const JobArrays::Tally* JobArrays::TallyOf(const std::string& array_id) const {
  auto tally = tallies_.find(array_id);
  return tally == tallies_.end() ? nullptr : &tally->second;
}

Result<std::vector<std::string>> JobArrays::JobsOf(const std::string& array_id) const {
  auto tally = tallies_.find(array_id);
  if (tally == tallies_.end()) {
    if (table_->Find(array_id)) {
      return Status::NotFound(fmt::format("job {} is not an array (array: in its job file)", array_id));
    }
    return Status::NotFound(fmt::format("no array '{}'", array_id));
  }
  std::vector<std::string> ids;
  // An array's jobs are made by one call: neighbours in submission order.
  const JobTable::JobOrder& order = table_->order();
  for (auto it = table_->FirstFrom(tally->second.first_seq); it != order.end(); ++it) {
    const TrackedJob& job = table_->At(*it);
    if (job.seq > tally->second.last_seq) break;
    if (job.info.spec().array_id() == array_id) ids.push_back(*it);
  }
  return ids;
}

Result<JobInfo> JobArrays::Stop(const std::string& array_id) {
  ASSIGN_OR_RETURN(std::vector<std::string> ids, JobsOf(array_id));
  // Those not started first: a running one stopped frees its place, which
  // one still waiting would otherwise take.
  std::stable_partition(ids.begin(), ids.end(), [this](const std::string& id) { return !table_->Find(id)->active; });
  int stopped = 0, ended = 0;
  for (const std::string& id : ids) {
    if (IsTerminal(table_->Find(id)->info.state())) {
      ++ended;
      continue;
    }
    auto done = stop_(id, "stopped with its array by clusterctl stop --array");
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

Result<JobInfo> JobArrays::Delete(const std::string& array_id) {
  ASSIGN_OR_RETURN(std::vector<std::string> ids, JobsOf(array_id));
  const auto going = std::count_if(ids.begin(), ids.end(), [this](const std::string& id) {
    return !IsTerminal(table_->Find(id)->info.state());
  });
  if (going > 0) {
    return Status::FailedPrecondition(fmt::format("array {} has {} of its {} jobs not finished: stop them first "
                                                  "(`clusterctl stop --array {}`)", array_id, going, ids.size(),
                                                  array_id));
  }
  int deleted = 0;
  for (const std::string& id : ids) {
    auto done = delete_(id);
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

bool JobArrays::ParkedByLimit(TrackedJob& job) {
  const JobSpec& spec = job.info.spec();
  const int limit = spec.array().max_concurrent();
  if (spec.array_id().empty() || limit <= 0 || job.active) return false;
  auto running = running_.find(spec.array_id());
  if (running == running_.end() || running->second < limit) return false;
  std::string reason = fmt::format("waiting: array {} runs at most {} of its jobs at once (max_concurrent)",
                                   spec.array_id(), limit);
  if (job.info.reason() != reason) {
    table_->SetState(job, job.info.state() == RESTARTING ? RESTARTING : PENDING, reason);
  }
  parked_[spec.array_id()].push_back(job.info.job_id());
  return true;
}

}  // namespace clusterd
