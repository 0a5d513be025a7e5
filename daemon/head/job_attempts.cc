#include "daemon/head/job_attempts.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "common/logging.h"
#include "common/text.h"
#include "common/utf8.h"
#include "daemon/head/job_delta.h"

namespace clusterd {

void JobAttempts::FoldOldAttempts(JobInfo& info) const {
  const int keep = std::max(1, config_.max_attempts_kept);
  while (info.attempts_size() >= keep) {
    FoldAttempt(info.attempts(0), info.mutable_older_attempts());
    info.mutable_attempts()->DeleteSubrange(0, 1);
  }
}

std::string JobAttempts::Start(TrackedJob& job, const std::vector<std::pair<std::string, int>>& plan) {
  // Everything is allocated before anything starts: a rank that got no
  // share of its node must not run unconfined (DESIGN rule 3: all or none).
  std::vector<RankSlot> slots;
  for (const auto& [node_id, count] : plan) {
    const NodeInfo* node = parts_.nodes->Find(node_id);
    for (int local = 0; local < count; ++local) {
      RankSlot slot;
      slot.node_id = node_id;
      slot.incarnation = node ? node->incarnation() : 0;
      slot.allocated = node && parts_.nodes->TryAllocate(node_id, job.info.spec().resources_per_worker(), &slot.gpus);
      if (!slot.allocated) {
        for (RankSlot& taken : slots) {
          parts_.nodes->Release(taken.node_id, taken.incarnation, job.info.spec().resources_per_worker(), taken.gpus);
        }
        LOG_ERROR("job {}: allocation on {} failed after planning", job.info.job_id(), node_id);
        return fmt::format("waiting: node {} could not give rank {} its share", node ? node->name() : node_id,
                           slots.size());
      }
      slots.push_back(slot);
    }
  }
  FoldOldAttempts(job.info);
  AttemptInfo attempt;
  attempt.set_attempt(AttemptCount(job.info));
  attempt.set_start_unix_ms(clock_->UnixMillis());
  job.run = LiveAttempt();
  job.run.started_at = clock_->NowMicros();
  int rank = 0;
  for (size_t node_rank = 0; node_rank < plan.size(); ++node_rank) {
    const auto& [node_id, count] = plan[node_rank];
    const NodeInfo* node = parts_.nodes->Find(node_id);
    for (int local = 0; local < count; ++local, ++rank) {
      RankSlot& slot = slots[static_cast<size_t>(rank)];
      RankInfo* info = attempt.add_ranks();
      info->set_rank(rank);
      info->set_node_id(node_id);
      info->set_node_name(node->name());
      info->set_local_rank(local);
      info->set_node_rank(static_cast<int>(node_rank));
      for (int gpu : slot.gpus) info->add_gpus(gpu);
      job.run.slots.push_back(slot);
    }
  }
  const NodeInfo* master = parts_.nodes->Find(plan.front().first);
  attempt.set_master_addr(master->address());
  *job.info.add_attempts() = attempt;
  parts_.launch->ChooseRestore(job);  // journaled with the RUNNING below
  parts_.arrays->SetActive(job, true);
  parts_.table->SetState(job, RUNNING,
                         attempt.attempt() == 0 ? "placed" : fmt::format("attempt {} placed", attempt.attempt()));
  if (plan.size() == 1) {
    // The whole gang on one node: it picks the port as it launches, which
    // spares a round trip (two messages, a loop turn on each side) per job.
    job.run.port_reserved = true;
    Launch(job);
    return "";
  }
  if (!parts_.launch->ReservePort(job, plan.front().first)) {
    End(job, AttemptEnding::kFail, fmt::format("node {} of rank 0 has no open stream", master->name()));
  }
  return "";
}

void JobAttempts::OnPortReserved(const std::string& node_id, const PortReserved& message) {
  TrackedJob* job = parts_.table->Find(message.job_id());
  if (!job || !IsCurrent(*job, message.job_id(), message.attempt()) || job->run.port_reserved) return;
  if (!RunsRank(*job, node_id, 0)) {
    LOG_WARN("job {}: ignored a port from node {}, which does not run rank 0", message.job_id(), node_id);
    return;
  }
  job->run.port_reserved = true;
  if (job->run.ending != AttemptEnding::kNone) {  // stopped while the port was being found
    for (size_t rank = 0; rank < job->run.slots.size(); ++rank) job->run.exited.insert(static_cast<int>(rank));
    MaybeFinish(*job);
    return;
  }
  CurrentAttempt(job->info).set_master_port(message.port());
  Launch(*job);
  // A small delta (the attempt's port), so a restarted head shows where its
  // ranks meet; unless Launch already ended the attempt, which journaled it.
  if (job->active && job->run.ending == AttemptEnding::kNone) parts_.table->Persist(*job);
}

void JobAttempts::OnRankStarted(const std::string& node_id, const RankStarted& message) {
  TrackedJob* job = parts_.table->Find(message.job_id());
  if (!job || !IsCurrent(*job, message.job_id(), message.attempt())) return;
  int rank = message.rank();
  if (!RunsRank(*job, node_id, rank)) return;
  CurrentAttempt(job->info).mutable_ranks(rank)->set_pid(message.pid());
  job->run.started.insert(rank);
  if (message.master_port() > 0 && CurrentAttempt(job->info).master_port() == 0) {
    // The port the node picked (pick_master_port): journaled, as a reserved
    // one is, so that a restarted head shows where the ranks meet.
    CurrentAttempt(job->info).set_master_port(message.master_port());
    parts_.table->Persist(*job);
  }
}

void JobAttempts::OnRankExited(const std::string& node_id, const RankExited& message) {
  TrackedJob* job = parts_.table->Find(message.job_id());
  if (!job || !IsCurrent(*job, message.job_id(), message.attempt())) return;
  int rank = message.rank();
  if (rank < 0 || rank >= CurrentAttempt(job->info).ranks_size() || job->run.exited.count(rank)) return;
  if (!RunsRank(*job, node_id, rank) && !(job->run.adopting && parts_.adoption->AdoptExitedRank(*job, node_id, rank))) {
    LOG_WARN("job {}: ignored an exit of rank {} from node {}, which does not run it", message.job_id(), rank, node_id);
    return;
  }
  RankInfo* info = CurrentAttempt(job->info).mutable_ranks(rank);
  const std::string dropped =
      message.unrestorable_checkpoint().empty()
          ? ""
          : parts_.results->DropLostCheckpoint(*job, message.unrestorable_checkpoint(), info->node_name());
  // The store's loss is not the job's fault: it must not cost one of its
  // retries (the last one, with max_failures: 1).
  if (!dropped.empty() && job->run.ending == AttemptEnding::kNone) job->run.uncounted = true;
  info->set_exited(true);
  info->set_exit_code(message.exit_code());
  info->set_signal(message.signal());
  info->set_out_of_memory(message.out_of_memory());
  info->set_memory_limit_bytes(message.memory_limit_bytes());
  bool clean = message.exit_code() == 0 && message.signal() == 0 && message.error().empty();
  if (rank == 0 && clean) {
    job->run.outputs_manifest = message.outputs_manifest();
    job->run.outputs_bytes = message.outputs_bytes();
    job->run.outputs_missing.assign(message.outputs_missing().begin(), message.outputs_missing().end());
    if (!message.outputs_error().empty() && job->run.ending == AttemptEnding::kNone) {
      End(*job, AttemptEnding::kFail,
          fmt::format("rank 0 exited 0 on node {} but its outputs could not be stored: {}", info->node_name(),
                      message.outputs_error()));
    }
  }
  if (!clean && job->run.ending == AttemptEnding::kNone) {
    std::string what = message.error().empty() ? DescribeExit(message.exit_code(), message.signal())
                                               : "could not start: " + message.error();
    // The kernel's kill for the rank's memory limit (its cgroup on the node), not a crash of its code.
    if (message.out_of_memory()) {
      what = fmt::format("{}: out of memory (limit {})", what, HumanBytesExact(message.memory_limit_bytes()));
    }
    // A rank stopped because its node's agent was stopping (clusterd stop)
    // must not read as a crash of the training code.
    const NodeInfo* node = parts_.nodes->Find(node_id);
    if (node && node->state() == DRAINING) what += fmt::format(" while its node was draining ({})", node->state_reason());
    // The head's own copy of the log is raw bytes; the reason goes into proto strings.
    // A rank that never started has no lines of this attempt: the log's
    // last ones are an earlier attempt's.
    std::string tail = !message.log_tail().empty() || !message.error().empty()
                           ? message.log_tail()
                           : ValidUtf8(parts_.logs->Tail(job->info.job_id(), rank, config_.log_tail_lines));
    std::string reason = fmt::format("rank {} {} on node {} (attempt {}){}", rank, what, info->node_name(),
                                     CurrentAttempt(job->info).attempt(), dropped);
    if (!tail.empty()) reason += "; last log lines:\n" + tail;
    End(*job, AttemptEnding::kFail, reason);
  }
  const int attempt = CurrentAttempt(job->info).attempt();
  MarkExited(*job, rank);  // may end the attempt, and start the next
  if (job->active && CurrentAttempt(job->info).attempt() == attempt) {
    // Others of the attempt run on: the journal learns of this exit now, not
    // only with the attempt's end, so that a head restarted meanwhile does
    // not wait for a rank whose agent told of its exit already (and fail the
    // attempt: "did not come back").
    RankEnd end;
    end.set_attempt(attempt);
    end.set_rank(rank);
    end.set_exit_code(message.exit_code());
    end.set_signal(message.signal());
    parts_.table->journal().RankEnded(job->info.job_id(), end);
  }
}

void JobAttempts::End(TrackedJob& job, AttemptEnding ending, const std::string& reason) {
  if (job.run.ending != AttemptEnding::kNone) return;
  EndWhenDown(job, ending, reason);
  KillRemaining(job);
}

void JobAttempts::EndWhenDown(TrackedJob& job, AttemptEnding ending, const std::string& reason) {
  if (job.run.ending != AttemptEnding::kNone) return;
  job.run.ending = ending;
  job.run.ending_reason = reason;
  job.run.ranks_left_running = true;
  if (ending == AttemptEnding::kFail) CurrentAttempt(job.info).set_failure_reason(reason);
  LOG_INFO("job {}: ending attempt {}: {}", job.info.job_id(), CurrentAttempt(job.info).attempt(), reason);
}

void JobAttempts::KillRemaining(TrackedJob& job) {
  job.run.ranks_left_running = false;
  if (!job.run.port_reserved) {
    // Nothing was launched yet; whatever the port answer brings is ignored.
    for (size_t rank = 0; rank < job.run.slots.size(); ++rank) job.run.exited.insert(static_cast<int>(rank));
  } else {
    parts_.launch->KillRanks(job);
  }
  MaybeFinish(job);
}

void JobAttempts::MarkExited(TrackedJob& job, int rank) {
  job.run.exited.insert(rank);
  RankSlot& slot = job.run.slots[rank];
  if (slot.allocated) {
    parts_.nodes->Release(slot.node_id, slot.incarnation, job.info.spec().resources_per_worker(), slot.gpus);
    slot.allocated = false;
  }
  if (job.run.ending == AttemptEnding::kNone && job.run.exited.size() == job.run.slots.size()) {
    job.run.ending = AttemptEnding::kSucceed;  // every rank exited cleanly
  }
  MaybeFinish(job);
}

void JobAttempts::ReleaseSlots(TrackedJob& job) {
  for (auto& slot : job.run.slots) {
    if (slot.allocated) parts_.nodes->Release(slot.node_id, slot.incarnation, job.info.spec().resources_per_worker(), slot.gpus);
    slot.allocated = false;
  }
}

void JobAttempts::MaybeFinish(TrackedJob& job) {
  if (!job.active || job.run.ending == AttemptEnding::kNone || job.run.exited.size() < job.run.slots.size()) return;
  ReleaseSlots(job);
  parts_.arrays->SetActive(job, false);
  CurrentAttempt(job.info).set_end_unix_ms(clock_->UnixMillis());
  int attempt = CurrentAttempt(job.info).attempt();
  switch (job.run.ending) {
    case AttemptEnding::kSucceed:
      parts_.table->SetState(job, SUCCEEDED,
                             fmt::format("all {} ranks exited 0 (attempt {}){}", job.run.slots.size(), attempt,
                                         parts_.results->KeepOutputs(job)));
      break;
    case AttemptEnding::kStop:
      parts_.table->SetState(job, STOPPED, job.run.ending_reason);
      break;
    case AttemptEnding::kFail:
      if (job.run.uncounted) job.info.set_uncounted_failures(job.info.uncounted_failures() + 1);
      if (job.run.retry && attempt - job.info.uncounted_failures() < job.info.spec().max_failures()) {
        parts_.retry->Retry(job, attempt, job.run.ending_reason);
      } else {
        parts_.table->SetState(job, FAILED, job.run.ending_reason);
      }
      break;
    case AttemptEnding::kPreempt:
      if (requeue_preempted_) {
        requeue_preempted_(job);
      } else {
        parts_.table->SetState(job, STOPPED, job.run.ending_reason);
      }
      break;
    case AttemptEnding::kNone:
      break;
  }
  schedule_();
}

void JobAttempts::Launch(TrackedJob& job) {
  const std::string unreached = parts_.launch->Launch(job);
  if (!unreached.empty()) End(job, AttemptEnding::kFail, unreached);
}

}  // namespace clusterd
