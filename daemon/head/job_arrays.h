// Arrays: one submit makes `array.count` jobs, each told its index
// (CLUSTER_ARRAY_INDEX), at most `array.max_concurrent` of them running at
// once, as Slurm's --array=0-N%M. A job of a full array waits aside,
// PENDING with the reason, rather than at the head of the queue, so that
// other jobs go on past it (Slurm's JobArrayTaskLimit). Separate because
// an array is a group the other concerns see only as jobs: it counts its
// jobs by state (a listener of the job table) and how many of them run.
// NOT thread-safe: the head's event loop owns it.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "cluster.pb.h"
#include "common/status.h"
#include "daemon/head/job_table.h"

namespace clusterd {

class JobArrays : public JobEvents {
 public:
  // Stop and Delete of one job (the job manager's own, with their checks).
  using StopFn = std::function<Result<JobInfo>(const std::string& job_id, const std::string& reason)>;
  using DeleteFn = std::function<Result<JobInfo>(const std::string& job_id)>;

  // Each array's jobs the head has, counted by state, and the first and
  // last one's seq (they are neighbours in submission order; those between,
  // deleted or not, are its own): what a grouped listing reports, where
  // the array is once its first job is deleted, and whether it still runs,
  // without a walk of its jobs.
  struct Tally {
    std::map<JobState, int> by_state;
    uint64_t first_seq = ~uint64_t{0};
    uint64_t last_seq = 0;
  };

  // REQUIRES: the table outlives this object.
  JobArrays(JobTable* table, StopFn stop, DeleteFn remove)
      : table_(table), stop_(std::move(stop)), delete_(std::move(remove)) {}

  void OnJobAdded(TrackedJob& job) override { Count(job, job.info.state(), 1); }
  void OnStateChanged(TrackedJob& job, JobState from) override;
  void OnJobRemoved(const TrackedJob& job) override { Count(job, job.info.state(), -1); }

  // Every change of TrackedJob::active goes through here, so that each
  // array knows how many of its jobs run; one that ends puts its array's
  // first parked job back at the queue's front.
  void SetActive(TrackedJob& job, bool active);
  // A job of an array that already runs max_concurrent waits aside
  // (PENDING, saying why) instead of holding the queue; true if it did.
  bool ParkedByLimit(TrackedJob& job);
  // Whether the array has a job that is not final.
  bool Runs(const std::string& array_id) const;
  // Null when the head has none of the array's jobs.
  const Tally* TallyOf(const std::string& array_id) const;

  // Stop, or Delete, every job of an array; a record that sums it up (the
  // array's id, STOPPED, what was done as the reason). Delete refuses,
  // deleting none, while any job of it is not final.
  Result<JobInfo> Stop(const std::string& array_id);
  Result<JobInfo> Delete(const std::string& array_id);

 private:
  // Counts the job `delta` times in `state` in its array's tally.
  void Count(const TrackedJob& job, JobState state, int delta);
  // The ids of the array's jobs the head has, in submission order;
  // NotFound when it has no such array.
  Result<std::vector<std::string>> JobsOf(const std::string& array_id) const;

  JobTable* table_;
  StopFn stop_;
  DeleteFn delete_;
  std::unordered_map<std::string, Tally> tallies_;
  std::map<std::string, int> running_;                  // array id -> its jobs with a live attempt
  std::map<std::string, std::deque<std::string>> parked_;  // array id -> jobs waiting for one of them to end
};

}  // namespace clusterd
