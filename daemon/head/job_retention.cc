// JobManager, part six: which finished jobs the head keeps. A head that
// runs a thousand jobs a second would otherwise keep every record, log and
// stored output it ever had: memory, journal and disk growing without end.
// Like Ray's cap on the task records its GCS keeps, the head keeps the
// max_finished_jobs finished jobs that ended last and deletes older ones as
// `clusterctl delete` does: journalled, with their logs and stored data;
// and like Slurm's MinJobAge, none before it has been final for
// min_finished_job_age_s, so that whoever follows a job (`submit --follow`
// polls) sees how it ended. What retention never takes: a job that is not
// final, a finished job of an array that still has unfinished ones (a
// running array, and `submit --follow` of it, sees all of its jobs), and a
// sweep's trials (their sweep reads them).
#include <algorithm>

#include <fmt/format.h>

#include "common/logging.h"
#include "daemon/head/job_manager.h"

namespace clusterd {

namespace {

// Deletions in one tick at most: each is a journal entry and a log store
// change, and a head restarted with a far lower cap must keep answering.
constexpr int kRetireBatch = 10000;

}  // namespace

void JobManager::MarkUnfinished(Job& job) {
  if (unfinished_.emplace(job.seq, &job).second) NotRetirable(job);
}

void JobManager::NotRetirable(const Job& job) {
  retirable_.erase(job.retire_key);  // a key holds its job's seq: it matches no other job
  if (auto waiting = array_finished_.find(job.info.spec().array_id()); waiting != array_finished_.end()) {
    auto& jobs = waiting->second;
    jobs.erase(std::remove_if(jobs.begin(), jobs.end(), [&](const auto& entry) { return entry.first == job.retire_key; }),
               jobs.end());
    if (jobs.empty()) array_finished_.erase(waiting);
  }
}

void JobManager::MarkFinished(Job& job) {
  const std::string& array_id = job.info.spec().array_id();
  unfinished_.erase(job.seq);
  if (!job.info.spec().sweep_id().empty()) return;
  job.retire_key = {job.info.end_unix_ms(), job.seq};
  if (array_id.empty()) {
    retirable_.emplace(job.retire_key, job.info.job_id());
    return;
  }
  auto& waiting = array_finished_[array_id];
  waiting.emplace_back(job.retire_key, job.info.job_id());
  if (ArrayRuns(array_id)) return;
  for (auto& [key, id] : waiting) retirable_.emplace(key, std::move(id));
  array_finished_.erase(array_id);
}

Status JobManager::Forget(Job& job, const std::string& why) {
  // Copied: the job goes before the last use.
  const std::string job_id = job.info.job_id();
  // The record goes only once its deletion is durable: a head that cannot
  // write its journal must not forget what it would replay.
  RETURN_IF_ERROR(journal_.DeleteJob(job_id, why));
  data_.Delete(job.info);
  int ranks = job.info.spec().num_workers();
  for (const auto& attempt : job.info.attempts()) ranks = std::max(ranks, attempt.ranks_size());
  logs_->Delete(job_id, ranks);
  log_admission_.Forget(job_id);
  unfinished_.erase(job.seq);  // a final job has left it already; no pointer may outlive its job
  NotRetirable(job);
  TallyArrayJob(job, job.info.state(), -1);
  // Found by halving; retention deletes old jobs, near the deque's front.
  auto at = FirstFrom(job.seq);
  if (at != order_.end() && *at == job_id) order_.erase(at);
  jobs_.erase(job_id);
  return Status::Ok();
}

bool JobManager::Retire() {
  if (config_.max_finished_jobs <= 0) return false;
  const size_t keep = static_cast<size_t>(config_.max_finished_jobs);
  // Ended at or before this, a job is old enough to go.
  const int64_t ended_by = clock_->UnixMillis() - config_.min_finished_job_age_s * 1000;
  int retired = 0;
  std::string first;
  while (retirable_.size() > keep && retired < kRetireBatch && retirable_.begin()->first.first <= ended_by) {
    const std::string id = retirable_.begin()->second;
    Job* job = Find(id);
    if (!job || !IsTerminal(job->info.state())) {  // cannot be; must not stop retention, nor take a live job
      LOG_ERROR("retention: job {} is {}", id, job ? "not final" : "gone already");
      retirable_.erase(retirable_.begin());
      continue;
    }
    Status forgotten = Forget(*job, fmt::format("the head keeps the {} finished jobs that ended last "
                                                         "(--max-finished-jobs)", config_.max_finished_jobs));
    // The journal refused: its own retry (Tick) comes first, then this again.
    if (!forgotten.ok()) break;
    highest_retired_ = std::max(highest_retired_, JobNumber(id));
    if (retired++ == 0) first = id;
  }
  if (retired > 0) {
    LOG_INFO("deleted {} finished job{} ({}{}) with their logs and stored data: the head keeps the {} that "
             "ended last (--max-finished-jobs)",
             retired, retired == 1 ? "" : "s", first, retired == 1 ? "" : " and others", config_.max_finished_jobs);
  }
  return retired == kRetireBatch && retirable_.size() > keep && retirable_.begin()->first.first <= ended_by;
}

Status JobManager::UnknownJob(const std::string& job_id) const {
  const int number = JobNumber(job_id);
  if (number >= 0 && number <= highest_retired_) {
    return Status::NotFound(fmt::format(
        "no job '{}': the head keeps only the {} finished job{} that ended last (--max-finished-jobs) and has "
        "deleted older ones, with their logs and stored data",
        job_id, config_.max_finished_jobs, config_.max_finished_jobs == 1 ? "" : "s"));
  }
  return Status::NotFound(fmt::format("no job '{}'", job_id));
}

}  // namespace clusterd
