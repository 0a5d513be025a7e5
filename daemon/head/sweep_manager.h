// Sweeps on the head: a parent record (SweepInfo, id sweep-0001-<cluster>)
// whose trials are ordinary jobs submitted through JobManager's public API,
// admitted in index order within max_concurrent (or what the live nodes
// hold: sweep_admission.h). Poll() follows the trials' jobs: every new
// rank-0 report goes through the sweep's decisions (sweep_decisions.h:
// ASHA and stop criteria), and a trial decided about is stopped with the
// reason saying why; a finished job finishes its trial and admits the
// next; a sweep whose trials are all over ends (sweep_outcome.h). Sweep
// records go to their own journal (sweep_journal.h); trials' jobs and
// metrics are in the job journal, so Restore() rebuilds the rungs from them
// (sweep_restore.h) and finished trials are never run again. Queries are
// the table's (sweep_table.h).
// NOT thread-safe: the head's event loop owns it.
#pragma once

#include <string>
#include <vector>

#include "cluster.pb.h"
#include "common/clock.h"
#include "common/config.h"
#include "common/status.h"
#include "daemon/head/job_manager.h"
#include "daemon/head/job_store.h"
#include "daemon/head/node_table.h"
#include "daemon/head/sweep_journal.h"
#include "daemon/head/sweep_table.h"

namespace clusterd {

class SweepManager {
 public:
  // REQUIRES: every pointer outlives this object; `store` may be null (kept
  // in memory only).
  SweepManager(const Clock* clock, JobManager* jobs, const NodeTable* nodes, JobStore* store,
               Micros finish_grace = Config{}.trial_finish_grace_ms * int64_t{1000});

  // After JobManager::Restore: sweeps come back, running ones go on.
  Status Restore();

  static bool IsSweepId(const std::string& id) { return id.rfind("sweep-", 0) == 0; }
  // REQUIRES: request.spec().has_tune(). The sweep and its trials' jobs
  // record `owner`.
  Result<std::string> Submit(const SubmitJobRequest& request, const std::string& owner = kAdminUser);
  Result<SweepInfo> Get(const std::string& sweep_id) const { return table_.Get(sweep_id); }
  std::vector<SweepInfo> List() const { return table_.List(); }
  static constexpr int kSweepsPage = SweepTable::kSweepsPage;
  static constexpr int kMaxSweepsPage = SweepTable::kMaxSweepsPage;
  Result<ListSweepsReply> ListPage(const ListSweepsRequest& request) const { return table_.ListPage(request); }
  // Stops every trial not yet over; waiting ones are cancelled.
  Result<SweepInfo> Stop(const std::string& sweep_id);
  // Forgets an ended sweep and deletes its trials' jobs (their stored data
  // and logs, as clusterctl delete of each); refused, deleting nothing,
  // while the sweep or any of its trials' jobs still runs. Returns the
  // sweep as it was.
  Result<SweepInfo> Delete(const std::string& sweep_id);

  // Follows running sweeps' trials: reports, ends, admissions. Call after
  // every event the head handles (cheap: it looks at active trials only).
  void Poll();

  void set_cluster_id(const std::string& id) { cluster_id_ = id; }

 private:
  void Admit(SweepRun& sweep);
  void Follow(SweepRun& sweep, TrialInfo& trial);
  // One report of a trial through the sweep's decisions; `act`: stop the
  // trial's job when it is decided about. True when it was.
  bool OnReport(SweepRun& sweep, TrialInfo& trial, const MetricRecord& record, const JobInfo* job, bool act);
  // Stops the DONE trials' jobs that have not ended within finish_grace_.
  void StopUnfinished(SweepRun& sweep);
  void EndTrial(SweepRun& sweep, TrialInfo& trial, const JobInfo& job);
  void MaybeFinish(SweepRun& sweep);
  std::string NewId();

  const Clock* clock_;
  JobManager* jobs_;
  const NodeTable* nodes_;
  Micros finish_grace_;
  SweepTable table_;
  SweepJournal journal_;
  int next_number_ = 1;
  std::string cluster_id_;
};

}  // namespace clusterd
