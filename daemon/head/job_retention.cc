#include "daemon/head/job_retention.h"

#include <algorithm>

#include <fmt/format.h>

#include "common/logging.h"

namespace clusterd {

namespace {

// Deletions in one tick at most: each is a journal entry and a log store
// change, and a head restarted with a far lower cap must keep answering.
constexpr int kRetireBatch = 10000;

}  // namespace

void JobRetention::OnStateChanged(TrackedJob& job, JobState from) {
  const bool final_now = IsTerminal(job.info.state());
  if (final_now && !IsTerminal(from)) Finished(job);
  if (!final_now && IsTerminal(from)) NotRetirable(job);  // back from final
}

void JobRetention::NotRetirable(const TrackedJob& job) {
  retirable_.erase(job.retire_key);  // a key holds its job's seq: it matches no other job
  if (auto waiting = array_finished_.find(job.info.spec().array_id()); waiting != array_finished_.end()) {
    auto& jobs = waiting->second;
    jobs.erase(std::remove_if(jobs.begin(), jobs.end(), [&](const auto& entry) { return entry.first == job.retire_key; }),
               jobs.end());
    if (jobs.empty()) array_finished_.erase(waiting);
  }
}

void JobRetention::Finished(TrackedJob& job) {
  const std::string& array_id = job.info.spec().array_id();
  if (!job.info.spec().sweep_id().empty()) return;
  job.retire_key = {job.info.end_unix_ms(), job.seq};
  if (array_id.empty()) {
    retirable_.emplace(job.retire_key, job.info.job_id());
    return;
  }
  auto& waiting = array_finished_[array_id];
  waiting.emplace_back(job.retire_key, job.info.job_id());
  if (arrays_->Runs(array_id)) return;
  for (auto& [key, id] : waiting) retirable_.emplace(key, std::move(id));
  array_finished_.erase(array_id);
}

Result<JobInfo> JobRetention::Delete(const std::string& job_id) {
  TrackedJob* job = table_->Find(job_id);
  if (!job) return UnknownJob(job_id);
  if (!IsTerminal(job->info.state())) {
    return Status::FailedPrecondition(fmt::format("job {} is {}: stop it first (`clusterctl stop {}`)", job_id,
                                                  JobStateName(job->info.state()), job_id));
  }
  JobInfo info = job->info;
  Status forgotten = table_->Remove(*job, "deleted by clusterctl delete");
  if (!forgotten.ok()) return NotDurable(forgotten, "the job was not deleted");
  LOG_INFO("job {} ({}) deleted with its stored data and logs", job_id, info.spec().name());
  return info;
}

bool JobRetention::Retire() {
  if (config_.max_finished_jobs <= 0) return false;
  const size_t keep = static_cast<size_t>(config_.max_finished_jobs);
  // Ended at or before this, a job is old enough to go.
  const int64_t ended_by = clock_->UnixMillis() - config_.min_finished_job_age_s * 1000;
  int retired = 0;
  std::string first;
  while (retirable_.size() > keep && retired < kRetireBatch && retirable_.begin()->first.first <= ended_by) {
    const std::string id = retirable_.begin()->second;
    TrackedJob* job = table_->Find(id);
    if (!job || !IsTerminal(job->info.state())) {  // cannot be; must not stop retention, nor take a live job
      LOG_ERROR("retention: job {} is {}", id, job ? "not final" : "gone already");
      retirable_.erase(retirable_.begin());
      continue;
    }
    Status forgotten = table_->Remove(*job, fmt::format("the head keeps the {} finished jobs that ended last "
                                                        "(--max-finished-jobs)", config_.max_finished_jobs));
    // The journal refused: its own retry (Tick) comes first, then this again.
    if (!forgotten.ok()) break;
    highest_retired_ = std::max(highest_retired_, JobTable::JobNumber(id));
    if (retired++ == 0) first = id;
  }
  if (retired > 0) {
    LOG_INFO("deleted {} finished job{} ({}{}) with their logs and stored data: the head keeps the {} that "
             "ended last (--max-finished-jobs)",
             retired, retired == 1 ? "" : "s", first, retired == 1 ? "" : " and others", config_.max_finished_jobs);
  }
  return retired == kRetireBatch && retirable_.size() > keep && retirable_.begin()->first.first <= ended_by;
}

Status JobRetention::UnknownJob(const std::string& job_id) const {
  const int number = JobTable::JobNumber(job_id);
  if (number >= 0 && number <= highest_retired_) {
    return Status::NotFound(fmt::format(
        "no job '{}': the head keeps only the {} finished job{} that ended last (--max-finished-jobs) and has "
        "deleted older ones, with their logs and stored data",
        job_id, config_.max_finished_jobs, config_.max_finished_jobs == 1 ? "" : "s"));
  }
  return Status::NotFound(fmt::format("no job '{}'", job_id));
}

}  // namespace clusterd
