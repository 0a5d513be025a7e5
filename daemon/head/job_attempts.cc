// JobManager, part two: the life of one attempt. Place and allocate, ask
// rank 0's node for a free MASTER_PORT (or, for a gang on one node, let
// that node pick it as it launches), launch every node's ranks, follow
// their exits, and when the gang is down decide: succeed, retry (job_retry.cc: when), fail, stop.
#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "common/file_util.h"
#include "common/jobspec/job_spec.h"
#include "common/logging.h"
#include "common/resources.h"
#include "common/storage/s3_config.h"
#include "common/session.h"
#include "common/utf8.h"
#include "daemon/head/job_delta.h"
#include "daemon/head/job_manager.h"
#include "daemon/head/rank_env.h"

namespace clusterd {

std::string JobManager::DescribeExit(int exit_code, int signal) {
  return signal != 0 ? fmt::format("was killed by signal {}", signal) : fmt::format("exited with code {}", exit_code);
}

bool JobManager::IsCurrent(const Job& job, const std::string& job_id, int attempt) const {
  return job.active && job.info.job_id() == job_id && job.info.attempts_size() > 0 &&
         Current(job.info).attempt() == attempt;
}

bool JobManager::RunsRank(const Job& job, const std::string& node_id, int rank) const {
  return rank >= 0 && static_cast<size_t>(rank) < job.run.slots.size() && job.run.slots[rank].node_id == node_id;
}

void JobManager::FoldOldAttempts(JobInfo& info) const {
  const int keep = std::max(1, config_.max_attempts_kept);
  while (info.attempts_size() >= keep) {
    FoldAttempt(info.attempts(0), info.mutable_older_attempts());
    info.mutable_attempts()->DeleteSubrange(0, 1);
  }
}

std::string JobManager::StartAttempt(Job& job, const std::vector<std::pair<std::string, int>>& plan) {
  // Everything is allocated before anything starts: a rank that got no
  // share of its node must not run unconfined (DESIGN rule 3: all or none).
  std::vector<Slot> slots;
  for (const auto& [node_id, count] : plan) {
    const NodeInfo* node = nodes_->Find(node_id);
    for (int local = 0; local < count; ++local) {
      Slot slot;
      slot.node_id = node_id;
      slot.incarnation = node ? node->incarnation() : 0;
      slot.allocated = node && nodes_->TryAllocate(node_id, job.info.spec().resources_per_worker(), &slot.gpus);
      if (!slot.allocated) {
        for (Slot& taken : slots) {
          nodes_->Release(taken.node_id, taken.incarnation, job.info.spec().resources_per_worker(), taken.gpus);
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
  job.run = Run();
  job.run.started_at = clock_->NowMicros();
  int rank = 0;
  for (size_t node_rank = 0; node_rank < plan.size(); ++node_rank) {
    const auto& [node_id, count] = plan[node_rank];
    const NodeInfo* node = nodes_->Find(node_id);
    for (int local = 0; local < count; ++local, ++rank) {
      Slot& slot = slots[static_cast<size_t>(rank)];
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
  const NodeInfo* master = nodes_->Find(plan.front().first);
  attempt.set_master_addr(master->address());
  *job.info.add_attempts() = attempt;
  ChooseRestore(job);  // journaled with the RUNNING below
  SetActive(job, true);
  SetState(job, RUNNING,
           attempt.attempt() == 0 ? "placed" : fmt::format("attempt {} placed", attempt.attempt()));
  if (plan.size() == 1) {
    // The whole gang on one node: it picks the port as it launches, which
    // spares a round trip (two messages, a loop turn on each side) per job.
    job.run.port_reserved = true;
    Launch(job);
    return "";
  }
  HeadMessage reserve;
  reserve.mutable_reserve_port()->set_job_id(job.info.job_id());
  reserve.mutable_reserve_port()->set_attempt(attempt.attempt());
  if (!send_(plan.front().first, reserve)) {
    EndAttempt(job, Ending::kFail, fmt::format("node {} of rank 0 has no open stream", master->name()));
  }
  return "";
}

void JobManager::OnPortReserved(const std::string& node_id, const PortReserved& message) {
  Job* job = Find(message.job_id());
  if (!job || !IsCurrent(*job, message.job_id(), message.attempt()) || job->run.port_reserved) return;
  if (!RunsRank(*job, node_id, 0)) {
    LOG_WARN("job {}: ignored a port from node {}, which does not run rank 0", message.job_id(), node_id);
    return;
  }
  job->run.port_reserved = true;
  if (job->run.ending != Ending::kNone) {  // stopped while the port was being found
    for (size_t rank = 0; rank < job->run.slots.size(); ++rank) job->run.exited.insert(static_cast<int>(rank));
    MaybeFinish(*job);
    return;
  }
  Current(job->info).set_master_port(message.port());
  Launch(*job);
  // A small delta (the attempt's port), so a restarted head shows where its
  // ranks meet; unless Launch already ended the attempt, which journaled it.
  if (job->active && job->run.ending == Ending::kNone) Persist(*job);
}

bool JobManager::CheckpointsViaStore(const JobSpec& spec) const {
  // Checkpoints travel through a store (the cluster's, or the job's own S3
  // location) unless they are on shared storage.
  return IsS3Location(spec.checkpoint().storage()) ||
         (spec.checkpoint().storage() != "shared" && data_.has_store());
}

void JobManager::ChooseRestore(Job& job) {
  // What the attempt resumes from, on its record: the newest stored
  // checkpoint, which the node of rank 0 restores; otherwise the program
  // itself picks the newest complete one in its folder, the newest reported.
  if (CheckpointsViaStore(job.info.spec())) {
    const auto& stored = job.info.stored_checkpoints();
    Current(job.info).set_restored_checkpoint(stored.empty() ? "" : stored.rbegin()->name());
  } else if (!job.info.latest_checkpoint().empty()) {
    Current(job.info).set_restored_checkpoint(BaseName(job.info.latest_checkpoint()));
  }
}

void JobManager::Launch(Job& job) {
  const JobSpec& spec = job.info.spec();
  const bool own_storage = IsS3Location(spec.checkpoint().storage());
  const bool via_store = CheckpointsViaStore(spec);
  const AttemptInfo& attempt = Current(job.info);
  std::map<std::string, LaunchRanks> per_node;  // one message per node
  std::map<std::string, int> local_world;
  for (const auto& rank : attempt.ranks()) ++local_world[rank.node_id()];
  const LogAdmission::Budget log_budget = log_admission_.StartAttempt(
      job.info.job_id(), attempt.attempt(), spec, attempt.ranks_size(), logs_->JobBytes(job.info.job_id()));
  for (const auto& rank : attempt.ranks()) {
    LaunchRanks& launch = per_node[rank.node_id()];
    if (launch.argv().empty()) {
      launch.set_job_id(job.info.job_id());
      launch.set_attempt(attempt.attempt());
      // No port asked for: the gang is on this one node, which picks it.
      launch.set_pick_master_port(local_world.size() == 1 && attempt.master_port() == 0);
      if (via_store && job.info.stored_checkpoints_size() > 0) {
        *launch.mutable_restore() = *job.info.stored_checkpoints().rbegin();
      }
      if (own_storage) launch.set_checkpoint_storage(spec.checkpoint().storage());
      launch.set_outputs_storage(spec.outputs_storage());
      launch.set_log_limit_bytes(log_budget.limit_bytes);
      launch.set_log_tail_bytes(log_budget.tail_bytes);
      launch.set_run_as(spec.run_as());
      *launch.mutable_argv() = job.info.spec().entrypoint();
      if (ShipsPackage(job.info.spec())) {
        launch.set_package_id(job.info.spec().package_id());
        launch.set_package_bytes(job.info.spec().package_bytes());
      } else {
        launch.set_working_dir(job.info.spec().working_dir());
      }
    }
    if (rank.rank() == 0) {
      launch.set_store_checkpoints(via_store);
      if (via_store) launch.set_checkpoint_upload_bytes_per_s(EffectiveCheckpointUploadRate(spec));
      if (data_.has_store() || !spec.outputs_storage().empty()) *launch.mutable_outputs() = spec.outputs();
    }
    RankLaunch* r = launch.add_ranks();
    r->set_rank(rank.rank());
    const NodeInfo* node = nodes_->Find(rank.node_id());
    auto env = RankEnvironment(job.info, attempt, rank, local_world[rank.node_id()], node ? node->address() : "");
    r->mutable_env()->insert(env.begin(), env.end());
  }
  for (auto& [node_id, launch] : per_node) {
    FactorSharedEnv(&launch);
    launch.set_config_json(spec.config_json().empty() ? "{}" : spec.config_json());
    HeadMessage message;
    *message.mutable_launch() = std::move(launch);
    if (!send_(node_id, message)) {
      EndAttempt(job, Ending::kFail, fmt::format("could not reach node {} to launch ranks", node_id));
      return;
    }
  }
}

void JobManager::OnRankStarted(const std::string& node_id, const RankStarted& message) {
  Job* job = Find(message.job_id());
  if (!job || !IsCurrent(*job, message.job_id(), message.attempt())) return;
  int rank = message.rank();
  if (!RunsRank(*job, node_id, rank)) return;
  Current(job->info).mutable_ranks(rank)->set_pid(message.pid());
  job->run.started.insert(rank);
  if (message.master_port() > 0 && Current(job->info).master_port() == 0) {
    // The port the node picked (pick_master_port): journaled, as a reserved
    // one is, so that a restarted head shows where the ranks meet.
    Current(job->info).set_master_port(message.master_port());
    Persist(*job);
  }
}



void JobManager::OnRankExited(const std::string& node_id, const RankExited& message) {
  ReleaseRemnant(node_id, message);
  Job* job = Find(message.job_id());
  if (!job || !IsCurrent(*job, message.job_id(), message.attempt())) return;
  int rank = message.rank();
  if (rank < 0 || rank >= Current(job->info).ranks_size() || job->run.exited.count(rank)) return;
  if (!RunsRank(*job, node_id, rank) && !(job->run.adopting && AdoptExitedRank(*job, node_id, rank))) {
    LOG_WARN("job {}: ignored an exit of rank {} from node {}, which does not run it", message.job_id(), rank, node_id);
    return;
  }
  RankInfo* info = Current(job->info).mutable_ranks(rank);
  const std::string dropped = message.unrestorable_checkpoint().empty()
                                  ? ""
                                  : DropLostCheckpoint(*job, message.unrestorable_checkpoint(), info->node_name());
  // Found by exploratory testing: the lost checkpoint cost the job one of
  // its retries (the last one, with max_failures: 1).
  if (!dropped.empty() && job->run.ending == Ending::kNone) job->run.uncounted = true;
  info->set_exited(true);
  info->set_exit_code(message.exit_code());
  info->set_signal(message.signal());
  bool clean = message.exit_code() == 0 && message.signal() == 0 && message.error().empty();
  if (rank == 0 && clean) {
    job->run.outputs_manifest = message.outputs_manifest();
    job->run.outputs_bytes = message.outputs_bytes();
    job->run.outputs_missing.assign(message.outputs_missing().begin(), message.outputs_missing().end());
    if (!message.outputs_error().empty() && job->run.ending == Ending::kNone) {
      EndAttempt(*job, Ending::kFail,
                 fmt::format("rank 0 exited 0 on node {} but its outputs could not be stored: {}", info->node_name(),
                             message.outputs_error()));
    }
  }
  if (!clean && job->run.ending == Ending::kNone) {
    std::string what = message.error().empty() ? DescribeExit(message.exit_code(), message.signal())
                                               : "could not start: " + message.error();
    // Found by exploratory testing: a rank stopped because its node's agent
    // was stopping (clusterd stop) read as a crash of the training code.
    const NodeInfo* node = nodes_->Find(node_id);
    if (node && node->state() == DRAINING) what += fmt::format(" while its node was draining ({})", node->state_reason());
    // The head's own copy of the log is raw bytes; the reason goes into proto strings.
    // A rank that never started has no lines of this attempt: the log's
    // last ones are an earlier attempt's (found by exploratory testing).
    std::string tail = !message.log_tail().empty() || !message.error().empty()
                           ? message.log_tail()
                           : ValidUtf8(logs_->Tail(job->info.job_id(), rank, config_.log_tail_lines));
    std::string reason = fmt::format("rank {} {} on node {} (attempt {}){}", rank, what, info->node_name(),
                                     Current(job->info).attempt(), dropped);
    if (!tail.empty()) reason += "; last log lines:\n" + tail;
    EndAttempt(*job, Ending::kFail, reason);
  }
  const int attempt = Current(job->info).attempt();
  MarkExited(*job, rank);  // may end the attempt, and start the next
  if (job->active && Current(job->info).attempt() == attempt) {
    // Others of the attempt run on: the journal learns of this exit now, not
    // only with the attempt's end. Found by exploratory testing: a head
    // restarted meanwhile waited for the rank, whose agent had told of its
    // exit already, and failed the attempt ("did not come back").
    RankEnd end;
    end.set_attempt(attempt);
    end.set_rank(rank);
    end.set_exit_code(message.exit_code());
    end.set_signal(message.signal());
    journal_.RankEnded(job->info.job_id(), end);
  }
}

void JobManager::OnNodeDead(const NodeInfo& node) {
  // Infeasible jobs' reasons count the live nodes: brought up to date at
  // the next Tick (found by exploratory testing: they went on counting a
  // node that had left).
  infeasible_stale_ = true;
  // The node's table entry was reset: nothing it held is to be given back.
  for (auto it = remnants_.begin(); it != remnants_.end();) {
    it = std::get<0>(it->first) == node.node_id() ? remnants_.erase(it) : std::next(it);
  }
  // Only unfinished jobs run anywhere. Ending one may end others (a sweep
  // stops trials); none is erased from jobs_ meanwhile.
  for (Job* walked : TimedNow()) {  // only these run anywhere
    Job& job = *walked;
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
    // once (a retry after a lost node), whose slots these are not. Found by
    // exploratory testing: marked after, they were the new attempt's, which
    // then "succeeded" while its rank 0 ran, and whose CPU was never freed.
    for (int rank : lost) {
      job.run.slots[rank].allocated = false;  // the node's table entry was reset
      job.run.exited.insert(rank);
    }
    if (job.run.ending == Ending::kNone) {
      job.run.node_lost = true;
      EndAttempt(job, Ending::kFail,
                 fmt::format("node {} died ({}) with rank{} {} of attempt {}", node.name(), node.state_reason(),
                             lost.size() == 1 ? "" : "s", fmt::join(lost, ","), Current(job.info).attempt()));
    } else {
      MaybeFinish(job);  // a stop or failure under way waited for these ranks too
    }
  }
  Schedule();
}

void JobManager::EndAttempt(Job& job, Ending ending, const std::string& reason) {
  if (job.run.ending != Ending::kNone) return;
  job.run.ending = ending;
  job.run.ending_reason = reason;
  if (ending == Ending::kFail) Current(job.info).set_failure_reason(reason);
  LOG_INFO("job {}: ending attempt {}: {}", job.info.job_id(), Current(job.info).attempt(), reason);
  if (!job.run.port_reserved) {
    // Nothing was launched yet; whatever the port answer brings is ignored.
    for (size_t rank = 0; rank < job.run.slots.size(); ++rank) job.run.exited.insert(static_cast<int>(rank));
  } else {
    KillRanks(job);
  }
  MaybeFinish(job);
}

void JobManager::KillRanks(Job& job) {
  std::set<std::string> nodes;
  for (size_t rank = 0; rank < job.run.slots.size(); ++rank) {
    if (!job.run.exited.count(static_cast<int>(rank))) nodes.insert(job.run.slots[rank].node_id);
  }
  HeadMessage kill;
  kill.mutable_kill()->set_job_id(job.info.job_id());
  kill.mutable_kill()->set_attempt(Current(job.info).attempt());
  kill.mutable_kill()->set_grace_ms(config_.stop_grace_ms);
  for (const auto& node_id : nodes) {
    if (!send_(node_id, kill)) {
      // No stream: the node is dead or going; its ranks are as good as gone.
      for (size_t rank = 0; rank < job.run.slots.size(); ++rank) {
        if (job.run.slots[rank].node_id == node_id) job.run.exited.insert(static_cast<int>(rank));
      }
    }
  }
}

void JobManager::MarkExited(Job& job, int rank) {
  job.run.exited.insert(rank);
  Slot& slot = job.run.slots[rank];
  if (slot.allocated) {
    nodes_->Release(slot.node_id, slot.incarnation, job.info.spec().resources_per_worker(), slot.gpus);
    slot.allocated = false;
  }
  if (job.run.ending == Ending::kNone && job.run.exited.size() == job.run.slots.size()) {
    job.run.ending = Ending::kSucceed;  // every rank exited cleanly
  }
  MaybeFinish(job);
}

void JobManager::ReleaseSlots(Job& job) {
  for (auto& slot : job.run.slots) {
    if (slot.allocated) nodes_->Release(slot.node_id, slot.incarnation, job.info.spec().resources_per_worker(), slot.gpus);
    slot.allocated = false;
  }
}

void JobManager::MaybeFinish(Job& job) {
  if (!job.active || job.run.ending == Ending::kNone || job.run.exited.size() < job.run.slots.size()) return;
  ReleaseSlots(job);
  SetActive(job, false);
  Current(job.info).set_end_unix_ms(clock_->UnixMillis());
  int attempt = Current(job.info).attempt();
  switch (job.run.ending) {
    case Ending::kSucceed:
      SetState(job, SUCCEEDED,
               fmt::format("all {} ranks exited 0 (attempt {}){}", job.run.slots.size(), attempt, KeepOutputs(job)));
      break;
    case Ending::kStop:
      SetState(job, STOPPED, job.run.ending_reason);
      break;
    case Ending::kFail:
      if (job.run.uncounted) job.info.set_uncounted_failures(job.info.uncounted_failures() + 1);
      if (job.run.retry && attempt - job.info.uncounted_failures() < job.info.spec().max_failures()) {
        Retry(job, attempt, job.run.ending_reason);
      } else {
        SetState(job, FAILED, job.run.ending_reason);
      }
      break;
    case Ending::kNone:
      break;
  }
  Schedule();
}




}  // namespace clusterd
