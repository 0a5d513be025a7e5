// An attempt's commands to its nodes: ask rank 0's node for a free
// MASTER_PORT, launch each node's ranks with their environment and what
// they restore from, and kill them. Separate from the attempt lifecycle
// (job_attempts.h), which decides when: this class knows only what a
// node is told, and says when a node could not be reached.
// NOT thread-safe: the head's event loop owns it.
#pragma once

#include <functional>
#include <string>

#include "agent.pb.h"
#include "cluster.pb.h"
#include "common/config.h"
#include "daemon/head/job_data.h"
#include "daemon/head/job_logs.h"
#include "daemon/head/node_table.h"
#include "daemon/head/tracked_job.h"

namespace clusterd {

class JobLaunch {
 public:
  // Sends a command to a node's agent; false when the node has no stream.
  using SendFn = std::function<bool(const std::string& node_id, const HeadMessage& message)>;

  // REQUIRES: every pointer outlives this object.
  JobLaunch(const Config& config, const NodeTable* nodes, const JobData* data, JobLogs* logs, SendFn send)
      : config_(config), nodes_(nodes), data_(data), logs_(logs), send_(std::move(send)) {}

  // Checkpoints travel through a store (the cluster's, or the job's own S3
  // location) unless they are on shared storage.
  bool CheckpointsViaStore(const JobSpec& spec) const;
  // Sets the new attempt's restored_checkpoint: what its ranks resume from.
  void ChooseRestore(TrackedJob& job) const;
  // Asks `node_id` (rank 0's) for a free MASTER_PORT for the current
  // attempt; false when the node has no stream.
  bool ReservePort(const TrackedJob& job, const std::string& node_id);
  // Sends every node of the current attempt its ranks; "" when all were
  // sent, else why not (the attempt must fail).
  std::string Launch(TrackedJob& job);
  // Tells every node with a rank of the current attempt still up to stop
  // them (SIGTERM, stop_grace_ms, SIGKILL); the ranks of a node without a
  // stream count as exited.
  void KillRanks(TrackedJob& job);

 private:
  const Config& config_;
  const NodeTable* nodes_;
  const JobData* data_;
  JobLogs* logs_;
  SendFn send_;
};

}  // namespace clusterd
