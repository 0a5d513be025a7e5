// Admission: whether the head takes a submitted job, and making it. The
// spec is checked again (the wire is open to any client), with what only
// the head knows (log limits, a taken submission_id, the submit limits);
// the job is journalled before it is acknowledged, then queued. An
// array's jobs are made here too, all of one call. Separate from
// placement: a job admitted waits in the queue however long it takes.
// NOT thread-safe: the head's event loop owns it.
#pragma once

#include <cstdint>
#include <string>

#include "cluster.pb.h"
#include "common/clock.h"
#include "common/config.h"
#include "common/status.h"
#include "daemon/head/identity/owner_job_counts.h"
#include "daemon/head/identity/user_registry.h"
#include "daemon/head/job_data.h"
#include "daemon/head/job_logs.h"
#include "daemon/head/job_placement.h"
#include "daemon/head/job_table.h"
#include "daemon/head/submit_limits.h"

namespace clusterd {

class JobAdmission {
 public:
  // REQUIRES: every pointer outlives this object.
  JobAdmission(const Clock* clock, const Config& config, JobTable* table, JobData* data, const JobLogs* logs,
               JobPlacement* placement)
      : clock_(clock), config_(config), table_(table), data_(data), logs_(logs), placement_(placement),
        limits_(config) {
    table->Subscribe(&owner_counts_);
  }

  // Durable: when the journal cannot be written nothing changes and the
  // answer is Unavailable. The new job's id (an array's: its first job's).
  // Its jobs record `owner` (the caller's user name).
  Result<std::string> Submit(const SubmitJobRequest& request, const std::string& owner = kAdminUser);
  // Whether this head takes `spec` (JobManager::CheckSpec), as Submit checks it.
  Status CheckSpec(const JobSpec& spec) const;
  // Whether `adding` more jobs of `owner` may be submitted now (SubmitLimits).
  Status AdmitJobs(int64_t adding, const std::string& owner = kAdminUser) const;

 private:
  // Makes the array's jobs from a checked request; the first one's id.
  Result<std::string> SubmitArray(const SubmitJobRequest& request, const std::string& owner);
  // Makes one job from a checked request (with `spec`, which may differ
  // from the request's for an array's job) and queues it; its id. The
  // caller schedules, once for however many it made: an array's jobs
  // queued behind a waiting one would each look at every node again.
  Result<std::string> Create(const SubmitJobRequest& request, const JobSpec& spec, const std::string& owner);

  const Clock* clock_;
  const Config& config_;
  JobTable* table_;
  JobData* data_;
  const JobLogs* logs_;
  JobPlacement* placement_;
  SubmitLimits limits_;
  OwnerJobCounts owner_counts_;
};

}  // namespace clusterd
