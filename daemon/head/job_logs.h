// The head's copy of the ranks' output: what a node sends is held to the
// job's log limits (LogAdmission), opened by each attempt's banner and
// appended to the log store; and the store is kept under
// log_store_limit_mb with log_store_min_free_mb free on its disk. The
// store lives in the head's state folder, beside the journal, and a disk
// filled by logs would stop the journal and with it every change of state.
// Once the store wants room (LogStore::WantsRoom), the logs of the jobs
// that finished first go, as `clusterctl delete` would take them but
// keeping the job's record, which says why (JobInfo.logs_released). A
// running job's logs never go: when only theirs are left, the store itself
// refuses output past the limit or the floor and marks where it is
// missing (LogStore). Separate from the attempts and from queries: neither
// needs to know how output is bounded. A listener of the job table: a
// deleted job's logs go with it.
// NOT thread-safe: the head's event loop owns it.
#pragma once

#include <string>

#include "agent.pb.h"
#include "cluster.pb.h"
#include "common/clock.h"
#include "common/config.h"
#include "common/logs/log_store.h"
#include "common/status.h"
#include "daemon/head/job_table.h"
#include "daemon/head/log_admission.h"
#include "daemon/head/node_table.h"

namespace clusterd {

class JobLogs : public JobEvents {
 public:
  // REQUIRES: every pointer outlives this object.
  JobLogs(const Clock* clock, const Config& config, JobTable* table, const NodeTable* nodes, LogStore* logs)
      : clock_(clock),
        admission_(config),
        table_(table),
        nodes_(nodes),
        logs_(logs),
        created_unix_ms_(clock->UnixMillis()) {}

  void OnJobRemoved(const TrackedJob& job) override;

  // A job whose log_limit is above what this head allows is refused.
  Status CheckSpec(const JobSpec& spec) const { return admission_.CheckSpec(spec); }
  // What each rank of the job's current attempt may keep, told at launch
  // and held to from now on.
  LogAdmission::Budget StartAttempt(const TrackedJob& job);
  // Output of a rank from its node: kept only from the node running that
  // rank of the current attempt.
  void OnLog(const std::string& node_id, const LogData& message);

 private:
  // The rank's log already opens the job's current attempt with its banner.
  bool OpensAttemptAlready(const TrackedJob& job, int rank) const;
  // Removes the logs of the jobs that finished first until the store has
  // room again (see the top of this file).
  void MakeRoom();

  const Clock* clock_;
  LogAdmission admission_;
  JobTable* table_;
  const NodeTable* nodes_;
  LogStore* logs_;
  Micros room_looked_ = 0;  // when MakeRoom last found nothing to remove
  // Attempts that started before this are restored ones (the head
  // restarted, or a new leader in HA): their logs may open them already.
  const int64_t created_unix_ms_;
};

}  // namespace clusterd
