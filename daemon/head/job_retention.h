// Which finished jobs the head keeps. A head that runs a thousand jobs a
// second would otherwise keep every record, log and stored output it ever
// had: memory, journal and disk growing without end. Like Ray's cap on the
// task records its GCS keeps, the head keeps the max_finished_jobs finished
// jobs that ended last and deletes older ones as `clusterctl delete` does:
// journalled, with their logs and stored data; and like Slurm's MinJobAge,
// none before it has been final for min_finished_job_age_s, so that
// whoever follows a job (`submit --follow` polls) sees how it ended. What
// retention never takes: a job that is not final, a finished job of an
// array that still has unfinished ones (a running array, and `submit
// --follow` of it, sees all of its jobs), and a sweep's trials (their sweep
// reads them). Deleting a job on request is here too: both forget a
// finished job. A listener of the job table: a job that becomes final
// becomes retirable.
// NOT thread-safe: the head's event loop owns it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cluster.pb.h"
#include "common/clock.h"
#include "common/config.h"
#include "common/status.h"
#include "daemon/head/job_arrays.h"
#include "daemon/head/job_table.h"

namespace clusterd {

class JobRetention : public JobEvents {
 public:
  // REQUIRES: every pointer outlives this object.
  JobRetention(const Clock* clock, const Config& config, JobTable* table, const JobArrays* arrays)
      : clock_(clock), config_(config), table_(table), arrays_(arrays) {}

  void OnStateChanged(TrackedJob& job, JobState from) override;
  void OnJobRemoved(const TrackedJob& job) override { NotRetirable(job); }
  // A job restored final: retention's to delete, once every restored job
  // of its array is counted.
  void RestoredFinal(TrackedJob& job) { Finished(job); }

  // Forgets a finished job and deletes its data in the store (journalled).
  Result<JobInfo> Delete(const std::string& job_id);
  // Deletes the jobs that finished first beyond max_finished_jobs, once
  // they have been final for min_finished_job_age_s, a batch at most (each
  // a journal entry); true if more are left for the next tick.
  // Only between events: no caller may hold a job of those it deletes.
  bool Retire();
  // NotFound for an id the head does not have, saying when it may have been
  // deleted by retention.
  Status UnknownJob(const std::string& job_id) const;

 private:
  using RetireKey = std::pair<int64_t, uint64_t>;  // (end_unix_ms, seq)
  // The job is final: it becomes one retention may delete, unless it is a
  // sweep's trial or its array still has jobs that are not (then with the
  // array's last one).
  void Finished(TrackedJob& job);
  // The job leaves retirable_ and array_finished_ (where it is in either).
  void NotRetirable(const TrackedJob& job);

  const Clock* clock_;
  const Config& config_;
  JobTable* table_;
  const JobArrays* arrays_;
  // Finished jobs that retention may delete, those that ended first first.
  std::map<RetireKey, std::string> retirable_;
  // An array's finished jobs wait here while any of its jobs is not final,
  // so that a running array, and a `submit --follow` of it, always sees all
  // of its jobs; they become retirable with its last one.
  std::unordered_map<std::string, std::vector<std::pair<RetireKey, std::string>>> array_finished_;
  int highest_retired_ = -1;  // the highest job number retention deleted since this head started
};

}  // namespace clusterd
