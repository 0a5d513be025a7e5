// What ends an attempt from outside its ranks: a stop (clusterctl, a
// sweep's scheduler), the death of a node it runs on, its timeout, and
// ranks that did not come back after the head restarted. Separate from the
// attempt lifecycle (job_attempts.h), which follows what the ranks say;
// this decides when the head itself ends an attempt, and why.
// NOT thread-safe: the head's event loop owns it.
#pragma once

#include <functional>
#include <string>

#include "cluster.pb.h"
#include "common/clock.h"
#include "common/status.h"
#include "daemon/head/job_attempts.h"
#include "daemon/head/job_retention.h"
#include "daemon/head/job_table.h"

namespace clusterd {

class AttemptInterrupts {
 public:
  // REQUIRES: every pointer outlives this object. `schedule` looks at the
  // queue again.
  AttemptInterrupts(JobTable* table, JobAttempts* attempts, const JobRetention* retention,
                    std::function<void()> schedule)
      : table_(table), attempts_(attempts), retention_(retention), schedule_(std::move(schedule)) {}

  // Durable: when the journal cannot be written nothing changes and the
  // answer is Unavailable. `reason` says who stopped it.
  Result<JobInfo> Stop(const std::string& job_id, const std::string& reason);
  // The node's ranks are gone: every attempt with one there ends.
  void OnNodeDead(const NodeInfo& node);
  // The running job's deadlines: the adoption window after a restart, and
  // its timeout_s; `wake` learns of those still ahead.
  void CheckDeadlines(TrackedJob& job, Micros now, NextWake* wake);

 private:
  JobTable* table_;
  JobAttempts* attempts_;
  const JobRetention* retention_;
  std::function<void()> schedule_;
};

}  // namespace clusterd
