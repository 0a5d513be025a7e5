// What a job leaves behind: metric reports and checkpoints from the
// current attempt's rank 0 (or the rank that reports), outputs kept when
// the job succeeds, and the data the store evicted or lost. Separate from
// the attempt lifecycle: an attempt ending only asks what to say of its
// outputs; holding and letting go of blobs follows the job's events (a
// listener of the job table: a job that ends lets its package go and its
// checkpoints and outputs become evictable; a deleted one lets go of all).
// NOT thread-safe: the head's event loop owns it.
#pragma once

#include <cstdint>
#include <string>

#include "agent.pb.h"
#include "cluster.pb.h"
#include "common/clock.h"
#include "common/config.h"
#include "daemon/head/job_data.h"
#include "daemon/head/job_table.h"
#include "daemon/head/node_table.h"

namespace clusterd {

class JobResults : public JobEvents {
 public:
  // REQUIRES: every pointer outlives this object.
  JobResults(const Clock* clock, const Config& config, JobTable* table, const NodeTable* nodes, JobData* data)
      : clock_(clock), config_(config), table_(table), nodes_(nodes), data_(data) {}

  void OnStateChanged(TrackedJob& job, JobState from) override;
  void OnJobRemoved(const TrackedJob& job) override { data_->Delete(job.info); }

  void OnMetrics(const std::string& node_id, const MetricsReport& message);
  // Returns the job when the message came from the node of rank 0 of an
  // attempt whose checkpoints are still wanted (the checkpoint then kept,
  // or its refusal recorded), else null.
  TrackedJob* OnCheckpointStored(const std::string& node_id, const CheckpointStored& message);
  // Rank 0 exited 0 and its node stores its last checkpoint before the job
  // may end: the running job's reason says so (not journaled: the node
  // says it again while it lasts).
  void OnResultsPending(const std::string& node_id, const ResultsPending& message);
  // The store let go of a job's data (an owner of JobData): a finished
  // job's, evicted for room (`why` ""), or any job's that lost a blob
  // (`why` says how). A code package's is not on the job's record.
  void OnDataReleased(const std::string& owner, const std::string& why);

  // Keeps rank 0's outputs when the attempt succeeded; what the success's
  // reason adds about them ("" when all is well).
  std::string KeepOutputs(TrackedJob& job);
  // A node of the current attempt could not restore stored checkpoint
  // `manifest_id`, which the store lacks: dropped (JobData), journalled;
  // what the attempt's reason adds ("" when it stays).
  std::string DropLostCheckpoint(TrackedJob& job, const std::string& manifest_id, const std::string& node_name);

  // Records appended to a job's metrics in this head's life, restored ones
  // included: where a follower of its metrics is, as thinning
  // (job_metrics.h) drops older records and moves the rest.
  int64_t MetricsAppended(const std::string& job_id) const;
  // A restored record was given this received_seq: later ones follow it.
  void RestoredMetric(const MetricRecord& record) { metric_seq_ = std::max(metric_seq_, record.received_seq()); }

 private:
  // Whether a checkpoint that `node_id` stored for `attempt` is taken: from
  // the current attempt's rank 0; or from an earlier attempt's rank 0 whose
  // upload finished after that attempt ended (a rank failed right after a
  // checkpoint), while the job goes on and no later attempt has stored one.
  bool TakesCheckpoint(const TrackedJob& job, const std::string& node_id, int attempt) const;
  // Records on the job that `message`'s checkpoint was not stored, and why.
  void Refused(TrackedJob& job, const CheckpointStored& message, const std::string& why);
  // The name of the node rank 0 of `attempt` ran on ("" when not recorded).
  static std::string NodeNameOf(const TrackedJob& job, int attempt);

  const Clock* clock_;
  const Config& config_;
  JobTable* table_;
  const NodeTable* nodes_;
  JobData* data_;
  int64_t metric_seq_ = 0;  // the last MetricRecord.received_seq given, over every job and restart
};

}  // namespace clusterd
