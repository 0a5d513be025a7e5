// Where a preempted job resumes from (docs/SHARING.md "Requeue"): the
// checkpoint its rank 0 reported last, even when that one was still being
// stored when the attempt ended. A victim that ignores its notice is ended
// by SIGTERM while its node uploads the checkpoint it reported last (paced
// behind training, at full speed once rank 0 has exited); placed at once,
// its next attempt would restore the one stored before and re-run an epoch
// or more. So the requeued job waits in RESTARTING, holding no room, until
// that node says the checkpoint is stored (or that it could not be), the
// node dies, or resume_checkpoint_wait_ms passes; then it joins the queue.
// The wait is the job's retry_at (JobRetry::DueNow queues it at the
// bound, a stop ends it, a restarted head keeps the bound) and its
// LiveAttempt's awaited_checkpoint, kept until the next attempt starts.
// Separate from preemption's choice and deadlines (preemption.h), which
// call it when a victim's ranks are down.
// NOT thread-safe: the head's event loop owns it.
#pragma once

#include <string>

#include "agent.pb.h"
#include "cluster.pb.h"
#include "common/clock.h"
#include "common/config.h"
#include "daemon/head/job_launch.h"
#include "daemon/head/job_table.h"

namespace clusterd {

class ResumeWait {
 public:
  // REQUIRES: every pointer outlives this object.
  ResumeWait(const Clock* clock, const Config& config, JobTable* table, const JobLaunch* launch)
      : clock_(clock), config_(config), table_(table), launch_(launch) {}

  // The checkpoint the ended attempt's rank 0 reported last, when its node
  // is still storing it (reported, and neither stored nor refused since)
  // and the job's checkpoints go through a store; "" otherwise.
  std::string Awaited(const TrackedJob& job) const;
  // Puts the preempted job, whose attempt ended, where it waits to resume:
  // RESTARTING and, when a checkpoint is awaited (and
  // resume_checkpoint_wait_ms > 0), off the queue until it is settled,
  // what the reason says; else in the queue at once.
  void Requeue(TrackedJob& job);
  // A CheckpointStored (stored or refused) that the head took from the
  // node of the attempt's rank 0 (JobResults::OnCheckpointStored): true when it settles the checkpoint the
  // job waited for, which is now queued (its reason says which checkpoint it
  // resumes from).
  bool OnCheckpointSettled(TrackedJob& job, const CheckpointStored& message);
  // A node died: the jobs waiting for a checkpoint from it are queued
  // (nothing more will come from it). True when any was.
  bool OnNodeDead(const NodeInfo& node);

 private:
  void Release(TrackedJob& job, const std::string& why);

  const Clock* clock_;
  const Config& config_;
  JobTable* table_;
  const JobLaunch* launch_;
};

}  // namespace clusterd
