// The life of one attempt: place and allocate its gang, have its ranks
// launched (job_launch.h), follow their starts and exits, and when the
// gang is down decide: succeed, retry (job_retry.h: when), fail, or stop.
// States: PENDING -> RUNNING -> SUCCEEDED | FAILED | STOPPED, with
// RUNNING -> RESTARTING -> RUNNING for each retry (attempt counts up while
// attempts <= max_failures). What ends an attempt from outside its ranks
// (a stop, a node's death, a deadline) is attempt_interrupts.h.
// NOT thread-safe: the head's event loop owns it.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "agent.pb.h"
#include "cluster.pb.h"
#include "common/clock.h"
#include "common/config.h"
#include "common/logs/log_store.h"
#include "daemon/head/job_adoption.h"
#include "daemon/head/job_arrays.h"
#include "daemon/head/job_launch.h"
#include "daemon/head/job_results.h"
#include "daemon/head/job_retry.h"
#include "daemon/head/job_table.h"
#include "daemon/head/node_table.h"

namespace clusterd {

class JobAttempts {
 public:
  // The concerns an attempt's life goes through. REQUIRES: each outlives
  // this object.
  struct Parts {
    JobTable* table;
    NodeTable* nodes;
    LogStore* logs;
    JobLaunch* launch;
    JobRetry* retry;
    JobResults* results;
    JobArrays* arrays;
    JobAdoption* adoption;
  };
  // `schedule` looks at the queue again: an attempt that ends frees its share.
  JobAttempts(const Clock* clock, const Config& config, Parts parts, std::function<void()> schedule)
      : clock_(clock), config_(config), parts_(parts), schedule_(std::move(schedule)) {}

  // Starts an attempt on `plan` (node id, ranks there); "" when it
  // started, else why not (an allocation failed: nothing was taken and the
  // job keeps waiting).
  std::string Start(TrackedJob& job, const std::vector<std::pair<std::string, int>>& plan);

  void OnPortReserved(const std::string& node_id, const PortReserved& message);
  void OnRankStarted(const std::string& node_id, const RankStarted& message);
  void OnRankExited(const std::string& node_id, const RankExited& message);

  // Ends the current attempt: its ranks are killed, and once all are down
  // the job succeeds, retries, fails or stops as `ending` says. An attempt
  // already ending keeps its first ending.
  void End(TrackedJob& job, AttemptEnding ending, const std::string& reason);
  // Decides how the current attempt ends, its ranks left running: they end
  // by themselves (or by a later KillRemaining), and once all are down the
  // job goes on as `ending` says, whatever their exit codes. An attempt
  // already ending keeps its first ending.
  void EndWhenDown(TrackedJob& job, AttemptEnding ending, const std::string& reason);
  // The ranks of an ending attempt that still run get SIGTERM, then the
  // attempt's kill grace, then SIGKILL.
  void KillRemaining(TrackedJob& job);
  // Once every rank of an ending attempt is down: the job's next state.
  void MaybeFinish(TrackedJob& job);
  // What becomes of a job whose attempt ended by preemption once its ranks
  // are down (Preemption::Requeue). Unset: it is stopped.
  void SetPreempted(std::function<void(TrackedJob&)> requeue) { requeue_preempted_ = std::move(requeue); }

 private:
  // Sums up the oldest attempts until one more fits under max_attempts_kept.
  void FoldOldAttempts(JobInfo& info) const;
  // Sends the ranks; a node that cannot be reached fails the attempt.
  void Launch(TrackedJob& job);
  void MarkExited(TrackedJob& job, int rank);
  void ReleaseSlots(TrackedJob& job);

  const Clock* clock_;
  const Config& config_;
  Parts parts_;
  std::function<void()> schedule_;
  std::function<void(TrackedJob&)> requeue_preempted_;
};

}  // namespace clusterd
