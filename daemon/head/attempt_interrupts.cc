#include "daemon/head/attempt_interrupts.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "common/logging.h"

namespace clusterd {

Result<JobInfo> AttemptInterrupts::Stop(const std::string& job_id, const std::string& reason) {
  TrackedJob* job = table_->Find(job_id);
  if (!job) return retention_->UnknownJob(job_id);
  if (IsTerminal(job->info.state())) return job->info;
  // A stop the journal does not hold would be undone by a restarted head.
  Status writable = table_->journal().Writable();
  if (!writable.ok()) return NotDurable(writable, "the job was not stopped");
  if (job->active && (job->run.ending == AttemptEnding::kFail || job->run.ending == AttemptEnding::kPreempt)) {
    // Its ranks may take seconds to end (a SIGTERM handler saving a
    // checkpoint): a stop meanwhile must not be dropped, or the job would go
    // on to its next attempts.
    job->run.ending = AttemptEnding::kStop;
    job->run.retry = false;
    job->run.ending_reason = fmt::format("{} while attempt {} was ending: {}", reason,
                                         CurrentAttempt(job->info).attempt(), job->run.ending_reason);
    LOG_INFO("job {}: {}", job_id, job->run.ending_reason);
    // Ranks left to finish on a preemption's notice are told to stop now.
    if (job->run.ranks_left_running) attempts_->KillRemaining(*job);
  } else if (job->active) {
    attempts_->End(*job, AttemptEnding::kStop, reason);
  } else if (job->info.state() == RESTARTING) {
    job->retry_at = 0;
    job->info.set_retry_at_unix_ms(0);
    table_->SetState(*job, STOPPED, fmt::format("{} before attempt {} started", reason, AttemptCount(job->info)));
  } else {
    table_->SetState(*job, STOPPED, reason + " before it ran");
  }
  // A job that waited first in the queue held back those behind it.
  if (!job->active) schedule_();
  return job->info;
}

void AttemptInterrupts::OnNodeDead(const NodeInfo& node) {
  // Only unfinished jobs run anywhere. Ending one may end others (a sweep
  // stops trials); none is erased from the table meanwhile.
  for (TrackedJob* walked : table_->TimedNow()) {  // only these run anywhere
    TrackedJob& job = *walked;
    if (!job.active) continue;
    std::vector<int> lost;
    for (size_t rank = 0; rank < job.run.slots.size(); ++rank) {
      if (job.run.slots[rank].node_id == node.node_id() && !job.run.exited.count(static_cast<int>(rank))) {
        lost.push_back(static_cast<int>(rank));
      }
    }
    if (job.run.adopting) {
      // Journaled placement names nodes; ranks are matched at adoption.
      continue;
    }
    if (lost.empty()) continue;
    // Gone before the attempt ends: ending it may start the next attempt at
    // once (a retry after a lost node), whose slots these are not; marked
    // after, they would be the new attempt's, which would then "succeed"
    // while its rank 0 ran, its CPU never freed.
    for (int rank : lost) {
      job.run.slots[rank].allocated = false;  // the node's table entry was reset
      job.run.exited.insert(rank);
    }
    if (job.run.ending == AttemptEnding::kNone) {
      job.run.node_lost = true;
      attempts_->End(job, AttemptEnding::kFail,
                     fmt::format("node {} died ({}) with rank{} {} of attempt {}", node.name(), node.state_reason(),
                                 lost.size() == 1 ? "" : "s", fmt::join(lost, ","),
                                 CurrentAttempt(job.info).attempt()));
    } else {
      attempts_->MaybeFinish(job);  // a stop or failure under way waited for these ranks too
    }
  }
  schedule_();
}

void AttemptInterrupts::CheckDeadlines(TrackedJob& job, Micros now, NextWake* wake) {
  if (job.run.adopting) {
    if (now < job.run.adopt_deadline) {
      wake->Want(job.run.adopt_deadline);
      return;
    }
    job.run.adopting = false;
    std::vector<int> missing;
    for (size_t rank = 0; rank < job.run.slots.size(); ++rank) {
      if (!job.run.started.count(static_cast<int>(rank))) {
        missing.push_back(static_cast<int>(rank));
        job.run.exited.insert(static_cast<int>(rank));
      }
    }
    if (missing.empty()) {
      // Every rank had exited before the restart, the attempt's end not
      // journalled yet: a failed one set its ending at Restore.
      if (job.run.ending == AttemptEnding::kNone) job.run.ending = AttemptEnding::kSucceed;
      attempts_->MaybeFinish(job);
      return;
    }
    if (job.run.ending != AttemptEnding::kNone) {
      // It was ending before the restart (a rank had failed, or it was
      // being stopped): the ranks that did not come back are down with
      // it, and it ends as it was ending once the others are.
      attempts_->KillRemaining(job);
      return;
    }
    attempts_->End(job, AttemptEnding::kFail,
                   fmt::format("rank{} {} did not come back after the head restarted", missing.size() == 1 ? "" : "s",
                               fmt::join(missing, ",")));
    return;
  }
  double timeout_s = job.info.spec().timeout_s();
  if (timeout_s <= 0 || job.run.ending != AttemptEnding::kNone) return;
  // Clamped: a timeout of years must not overflow into the past.
  constexpr double kMaxTimeoutMicros = 1e17;  // about 3000 years
  Micros deadline = job.run.started_at + static_cast<Micros>(std::min(timeout_s * 1e6, kMaxTimeoutMicros));
  if (now >= deadline) {
    job.run.retry = false;  // a timed-out attempt is not tried again: the job fails
    attempts_->End(job, AttemptEnding::kFail, fmt::format("timed out after {} s", timeout_s));
  } else {
    wake->Want(deadline);
  }
}

}  // namespace clusterd
