// When a failed attempt is tried again: the job's restart_delay, growing
// exponentially while attempts keep failing, as Kubernetes' crash loops
// and Nomad's reschedules wait, so that a job failing at once does not
// spin. Separate from the attempt lifecycle, which decides that a retry
// is due; this decides when it runs, and runs the wait.
// NOT thread-safe: the head's event loop owns it.
#pragma once

#include <string>

#include "common/clock.h"
#include "daemon/head/job_table.h"

namespace clusterd {

class JobRetry {
 public:
  // REQUIRES: both outlive this object.
  JobRetry(const Clock* clock, JobTable* table) : clock_(clock), table_(table) {}

  // After failed attempt `attempt` that will be retried: waits out the
  // job's restart_delay in RESTARTING (DueNow queues it), or queues it at
  // once, before newer jobs.
  void Retry(TrackedJob& job, int attempt, const std::string& failure);
  // A RESTARTING job whose delay is over goes first in line, as a retry
  // does: true when it was queued; else `wake` learns when it is due.
  bool DueNow(TrackedJob& job, Micros now, NextWake* wake);

 private:
  const Clock* clock_;
  JobTable* table_;
};

}  // namespace clusterd
