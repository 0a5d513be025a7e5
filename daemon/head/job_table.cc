#include "daemon/head/job_table.h"

#include <algorithm>
#include <cstdio>

#include <fmt/format.h>

#include "common/logging.h"

namespace clusterd {

namespace {

// Swaps `owned` into `slot` (a field of a journal entry) for a scope, and
// back on every way out of it, a throw included: the record is lent, not copied.
template <typename Message>
class Lent {
 public:
  Lent(Message* owned, Message* slot) : owned_(owned), slot_(slot) { slot_->Swap(owned_); }
  ~Lent() { slot_->Swap(owned_); }
  Lent(const Lent&) = delete;
  Lent& operator=(const Lent&) = delete;

 private:
  Message* owned_;
  Message* slot_;
};

}  // namespace

JobTable::JobTable(const Clock* clock, const Config& config, JobStore* store)
    : clock_(clock),
      journal_(clock, config, store, [this](const JobStore::EntrySink& emit) { return EmitSnapshot(emit); }) {}

TrackedJob* JobTable::Find(const std::string& job_id) {
  auto it = jobs_.find(job_id);
  return it == jobs_.end() ? nullptr : &it->second;
}

const TrackedJob* JobTable::Find(const std::string& job_id) const {
  auto it = jobs_.find(job_id);
  return it == jobs_.end() ? nullptr : &it->second;
}

TrackedJob& JobTable::Add(TrackedJob job) {
  job.seq = next_seq_++;
  std::string id = job.info.job_id();
  TrackedJob& added = jobs_.emplace(id, std::move(job)).first->second;
  if (!IsTerminal(added.info.state())) unfinished_.emplace(added.seq, &added);
  UpdateTimed(added);
  order_.push_back(std::move(id));
  for (JobEvents* listener : listeners_) listener->OnJobAdded(added);
  return added;
}

void JobTable::SetState(TrackedJob& job, JobState state, const std::string& reason) {
  const JobState from = job.info.state();
  job.info.set_state(state);
  job.info.set_reason(reason);
  UpdateTimed(job);
  if (IsTerminal(state)) {
    job.info.set_end_unix_ms(clock_->UnixMillis());
    unfinished_.erase(job.seq);
  } else {
    unfinished_.emplace(job.seq, &job);
  }
  for (JobEvents* listener : listeners_) listener->OnStateChanged(job, from);
  LOG_INFO("job {} ({}): {} -> {}{}{}", job.info.job_id(), job.info.spec().name(), JobStateName(from),
           JobStateName(state), reason.empty() ? "" : ": ", reason);
  Persist(job);
}

Status JobTable::Remove(TrackedJob& job, const std::string& why) {
  // Copied: the job goes before the last use.
  const std::string job_id = job.info.job_id();
  // The record goes only once its deletion is durable: a head that cannot
  // write its journal must not forget what it would replay.
  RETURN_IF_ERROR(journal_.DeleteJob(job_id, why));
  for (JobEvents* listener : listeners_) listener->OnJobRemoved(job);
  unfinished_.erase(job.seq);  // a final job has left it already; no pointer may outlive its job
  timed_.erase(job.seq);
  // Found by halving; retention deletes old jobs, near the deque's front.
  auto at = FirstFrom(job.seq);
  if (at != order_.end() && *at == job_id) order_.erase(at);
  jobs_.erase(job_id);
  return Status::Ok();
}

int JobTable::JobNumber(const std::string& job_id) {
  int number = -1, end = 0;
  if (sscanf(job_id.c_str(), "job-%d%n", &number, &end) != 1 || number < 0) return -1;
  const size_t after = static_cast<size_t>(end);
  if (after == job_id.size() || (job_id[after] == '-' && after + 1 < job_id.size())) return number;
  return -1;
}

std::string JobTable::NewJobId() {
  int number = next_job_number_++;
  return cluster_id_.empty() ? fmt::format("job-{:04d}", number) : fmt::format("job-{:04d}-{}", number, cluster_id_);
}

std::optional<std::string> JobTable::JobOfSubmission(const std::string& submission_id) const {
  if (submission_id.empty()) return std::nullopt;
  auto it = by_submission_.find(submission_id);
  if (it == by_submission_.end()) return std::nullopt;
  // The entry of a job since deleted names no job, or (never: ids are not
  // handed out twice) another one.
  const TrackedJob* job = Find(it->second);
  if (!job || job->info.spec().submission_id() != submission_id) return std::nullopt;
  return it->second;
}

void JobTable::IndexSubmission(const std::string& submission_id, const std::string& job_id) {
  // Deleted jobs' entries go all at once when they outnumber the jobs:
  // amortised O(1) a submit, and the index at most twice what it holds.
  if (by_submission_.size() >= 2 * jobs_.size() + 1024) {
    for (auto it = by_submission_.begin(); it != by_submission_.end();) {
      it = jobs_.count(it->second) ? std::next(it) : by_submission_.erase(it);
    }
  }
  by_submission_[submission_id] = job_id;
}

void JobTable::ForEach(const std::function<void(const TrackedJob&)>& fn) const {
  for (const auto& [id, job] : jobs_) fn(job);
}

void JobTable::ForEachToChange(const std::function<void(TrackedJob&)>& fn) {
  for (auto& [id, job] : jobs_) fn(job);
}

JobTable::JobOrder::const_iterator JobTable::FirstFrom(uint64_t seq) const {
  // order_ is in seq order (both grow together): found by halving, not by a
  // walk from the first job the head ever ran.
  return std::partition_point(order_.begin(), order_.end(),
                              [&](const std::string& id) { return jobs_.at(id).seq < seq; });
}

std::vector<TrackedJob*> JobTable::TimedNow() const {
  std::vector<TrackedJob*> jobs;
  jobs.reserve(timed_.size());
  for (const auto& [seq, job] : timed_) jobs.push_back(job);
  return jobs;
}

void JobTable::UpdateTimed(TrackedJob& job) {
  const JobState state = job.info.state();
  if (IsTerminal(state) || state == PENDING || state == INFEASIBLE) {
    timed_.erase(job.seq);
  } else {
    timed_.emplace(job.seq, &job);
  }
}

Status JobTable::EmitSnapshot(const JobStore::EntrySink& emit) {
  const int64_t now = clock_->UnixMillis();
  JournalEntry entry;
  entry.set_unix_ms(now);
  entry.mutable_snapshot()->set_next_job_number(next_job_number_);
  entry.mutable_snapshot()->set_jobs(static_cast<int32_t>(order_.size()));
  int64_t metrics = 0;
  for (const auto& id : order_) metrics += static_cast<int64_t>(jobs_.at(id).metrics.size());
  entry.mutable_snapshot()->set_metrics(metrics);
  RETURN_IF_ERROR(emit(entry));
  for (const auto& id : order_) {
    TrackedJob& job = jobs_.at(id);
    entry.Clear();
    entry.set_unix_ms(now);
    entry.set_job_id(id);
    {
      // Lent, not copied: a copy of every record would be the snapshot's cost
      // in time and, for a moment, twice the head's memory.
      Lent<JobInfo> lent(&job.info, entry.mutable_job());
      RETURN_IF_ERROR(emit(entry));
    }
    for (MetricRecord& record : job.metrics) {
      entry.Clear();
      entry.set_unix_ms(now);
      entry.set_job_id(id);
      Lent<MetricRecord> lent(&record, entry.mutable_metric());
      RETURN_IF_ERROR(emit(entry));
    }
  }
  return Status::Ok();
}

}  // namespace clusterd
