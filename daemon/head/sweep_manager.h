// Sweeps on the head: a parent record (SweepInfo, id sweep-0001-<cluster>)
// whose trials are ordinary jobs submitted through JobManager's public API,
// admitted in index order within max_concurrent (or what the live nodes
// hold). Poll() follows the trials' jobs: every new rank-0 report goes
// through the sweep's ASHA (asha.h) and stop criteria, and a trial ASHA
// stops is stopped with the reason saying why; a finished job finishes its
// trial and admits the next. Sweep records go to their own JobStore (whole
// records, compacted as they grow); trials' jobs and metrics are in the
// job journal, so Restore() rebuilds the rungs from them and finished
// trials are never run again.
// NOT thread-safe: the head's event loop owns it.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cluster.pb.h"
#include "common/clock.h"
#include "common/status.h"
#include "daemon/head/asha.h"
#include "daemon/head/job_manager.h"
#include "daemon/head/job_store.h"
#include "daemon/head/node_table.h"

namespace clusterd {

class SweepManager {
 public:
  // REQUIRES: every pointer outlives this object; `store` may be null (kept
  // in memory only).
  SweepManager(const Clock* clock, JobManager* jobs, const NodeTable* nodes, JobStore* store,
               Micros finish_grace = 10'000'000);

  // After JobManager::Restore: sweeps come back, running ones go on.
  Status Restore();

  static bool IsSweepId(const std::string& id) { return id.rfind("sweep-", 0) == 0; }
  // REQUIRES: request.spec().has_tune().
  Result<std::string> Submit(const SubmitJobRequest& request);
  Result<SweepInfo> Get(const std::string& sweep_id) const;
  std::vector<SweepInfo> List() const;
  // One page of sweeps (a sweep carries its trials, so pages are small):
  // page_size sweeps or JobManager::kMaxReplyBytes, one sweep at least.
  static constexpr int kSweepsPage = 20;
  static constexpr int kMaxSweepsPage = 100;
  Result<ListSweepsReply> ListPage(const ListSweepsRequest& request) const;
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
  // The sweep as clients see it: each trial with its job's state now.
  SweepInfo Shown(const SweepInfo& info) const;
  struct Sweep {
    SweepInfo info;
    std::unique_ptr<Asha> asha;         // null without a scheduler
    std::map<int, size_t> seen;         // trial -> its job's metric records looked at (JobManager::MetricsAppended)
    std::map<int, int> attempt;         // trial -> the attempt its iterations count
    // trial -> checkpoint folder name -> the iteration of the report that carried it
    std::map<int, std::map<std::string, int64_t>> checkpoint_iteration;
    std::map<int, bool> decided;        // trial -> a stop was asked for (early stop, max_t, criterion)
    // trial -> when it is stopped unless it has ended by itself: a trial
    // DONE (max_t, a stop criterion) whose job still runs.
    std::map<int, Micros> finish_by;
  };

  // Stops the DONE trials' jobs that have not ended within finish_grace_.
  void StopUnfinished(Sweep& sweep);

  void Admit(Sweep& sweep);
  void Follow(Sweep& sweep, TrialInfo& trial);
  // One rank-0 report of a trial: ASHA and stop criteria; true when the
  // trial is to stop (the job was asked to).
  bool OnReport(Sweep& sweep, TrialInfo& trial, const MetricRecord& record, bool act);
  // Where training_iteration goes on from in a retry: the iteration of the
  // report that carried the checkpoint the attempt restored (0: none).
  int64_t IterationsRestored(const Sweep& sweep, const TrialInfo& trial, int attempt) const;
  void EndTrial(Sweep& sweep, TrialInfo& trial, const JobInfo& job);
  void UpdateBest(Sweep& sweep);
  void MaybeFinish(Sweep& sweep);
  // The sweep's whole record (submit, its end, a stop).
  void Persist(const Sweep& sweep);
  // The journal rewritten with the latest record of every sweep but `without`.
  Status Rewrite(const std::string& without);
  // Only the trials at `indexes` (a start, a decision, an end): the record
  // grows with the trials, so rewriting it per trial was quadratic.
  void PersistTrials(const Sweep& sweep, const std::vector<int>& indexes);
  // Appends and syncs `entry`, then compacts the journal when it is large.
  void Record(const Sweep& sweep, JournalEntry entry);
  // Appends and syncs: durable when OK.
  Status AppendDurably(const JournalEntry& entry);
  Sweep* Find(const std::string& id);
  std::string NewId();

  const Clock* clock_;
  JobManager* jobs_;
  const NodeTable* nodes_;
  JobStore* store_;
  Micros finish_grace_;
  std::unique_ptr<JobStore> memory_store_;  // when none was given
  std::map<std::string, Sweep> sweeps_;
  std::vector<std::string> order_;
  int next_number_ = 1;
  std::string cluster_id_;
  uint64_t live_bytes_ = 0;                  // the latest records' size: compaction's yardstick
};

}  // namespace clusterd
