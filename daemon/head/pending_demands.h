// What the jobs waiting for resources ask, summed up by shape: the
// cluster's unmet demand, which `clusterctl status`, the dashboard and an
// autoscaler read. Kept as a count and a first job per shape, in step with
// every job's state (a listener of the job table), so that reading it at
// every poll does not walk a queue of 100,000 jobs.
// NOT thread-safe: the head's event loop owns it.
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "cluster.pb.h"
#include "daemon/head/job_table.h"

namespace clusterd {

class PendingDemands : public JobEvents {
 public:
  // At most this many entries in a summary, whatever the queue's size.
  static constexpr int kShapes = 20;

  // REQUIRES: the table outlives this object.
  explicit PendingDemands(const JobTable* table) : table_(table) {}

  void OnJobAdded(TrackedJob& job) override { Update(job); }
  void OnStateChanged(TrackedJob& job, JobState from) override { Update(job); }

  // The waiting jobs (PENDING, INFEASIBLE, or RESTARTING without a live
  // attempt) by what they ask, in the order each shape was first
  // submitted: one PendingDemand per shape, its first job's id, name and
  // reason (as `explain` shows a record), more_like_it counting the rest.
  // Shapes past kShapes - 1 are summed in a last entry with num_workers 0
  // and a reason that counts them.
  std::vector<PendingDemand> Summary(const std::function<void(JobInfo*)>& explain) const;

 private:
  void Update(TrackedJob& job);

  const JobTable* table_;
  // By ShapeKey without placement: each a set of seq.
  std::unordered_map<std::string, std::set<uint64_t>> demands_;
};

}  // namespace clusterd
