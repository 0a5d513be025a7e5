#include "daemon/head/preemption/resume_wait.h"

#include <fmt/format.h>

#include "common/logging.h"

namespace clusterd {

namespace {

// "preempted by job-0002 (attempt 1, preemption 1)".
std::string PreemptedBy(const TrackedJob& job) {
  const AttemptInfo& attempt = CurrentAttempt(job.info);
  return fmt::format("preempted by {} (attempt {}, preemption {})", attempt.preempted_by(), attempt.attempt(),
                     job.info.preemptions());
}

// What a next attempt placed now would resume from.
std::string ResumesFrom(const TrackedJob& job) {
  return job.info.stored_checkpoints_size() > 0 ? "from " + job.info.stored_checkpoints().rbegin()->name()
                                                : "from the start (it stored no checkpoint)";
}

}  // namespace

std::string ResumeWait::Awaited(const TrackedJob& job) const {
  const std::string& reported = job.run.checkpoint_reported;
  if (reported.empty() || reported == job.run.checkpoint_settled || job.info.attempts_size() == 0 ||
      !launch_->CheckpointsViaStore(job.info.spec())) {
    return "";
  }
  const int attempt = CurrentAttempt(job.info).attempt();
  for (const CheckpointRef& stored : job.info.stored_checkpoints()) {
    if (stored.attempt() == attempt && stored.name() == reported) return "";
  }
  return reported;
}

void ResumeWait::Requeue(TrackedJob& job) {
  const std::string reason = PreemptedBy(job);
  const std::string awaited = Awaited(job);
  job.run.awaited_checkpoint.clear();
  job.retry_at = 0;
  job.info.set_retry_at_unix_ms(0);
  if (awaited.empty() || config_.resume_checkpoint_wait_ms <= 0) {
    table_->SetState(job, RESTARTING, fmt::format("{}; waits to resume {}", reason, ResumesFrom(job)));
    table_->queue().push_back(job.info.job_id());
    return;
  }
  // Off the queue, holding no room: the preempting job is placed
  // meanwhile. The bound is the job's retry_at, which JobRetry::DueNow
  // queues it at, and which a restarted head keeps.
  const int64_t wait_ms = config_.resume_checkpoint_wait_ms;
  job.run.awaited_checkpoint = awaited;
  job.retry_at = clock_->NowMicros() + wait_ms * 1000;
  job.info.set_retry_at_unix_ms(clock_->UnixMillis() + wait_ms);
  table_->SetState(job, RESTARTING,
                   fmt::format("{}; resumes from {}, which rank 0 reported last, once its node has stored it (at "
                               "most {} s from now, resume_checkpoint_wait_ms; else {})",
                               reason, awaited, wait_ms / 1000.0, ResumesFrom(job)));
}

bool ResumeWait::OnCheckpointSettled(TrackedJob& job, const CheckpointStored& message) {
  if (job.run.awaited_checkpoint.empty() || job.info.attempts_size() == 0 ||
      message.attempt() != CurrentAttempt(job.info).attempt() || message.name() != job.run.awaited_checkpoint) {
    return false;
  }
  Release(job, message.error().empty() ? fmt::format("its node stored {}", message.name())
                                       : fmt::format("its node did not store {}", message.name()));
  return true;
}

bool ResumeWait::OnNodeDead(const NodeInfo& node) {
  bool released = false;
  for (TrackedJob* job : table_->TimedNow()) {
    if (job->run.awaited_checkpoint.empty() || job->info.state() != RESTARTING || job->active) continue;
    const AttemptInfo& ended = CurrentAttempt(job->info);
    if (ended.ranks_size() == 0 || ended.ranks(0).node_id() != node.node_id()) continue;
    Release(*job, fmt::format("node {}, which was storing {}, died", node.name(), job->run.awaited_checkpoint));
    released = true;
  }
  return released;
}

void ResumeWait::Release(TrackedJob& job, const std::string& why) {
  job.run.awaited_checkpoint.clear();
  // Stopped (or queued at the bound) meanwhile: nothing waits any more.
  if (job.info.state() != RESTARTING || job.retry_at == 0) return;
  job.retry_at = 0;
  job.info.set_retry_at_unix_ms(0);
  LOG_INFO("job {}: {}: it resumes {}", job.info.job_id(), why, ResumesFrom(job));
  table_->SetState(job, RESTARTING, fmt::format("{}; {}: waits to resume {}", PreemptedBy(job), why, ResumesFrom(job)));
  table_->queue().push_back(job.info.job_id());
}

}  // namespace clusterd
