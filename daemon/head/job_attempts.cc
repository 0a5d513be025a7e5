// JobManager, part two: the life of one attempt. Place and allocate, ask
// rank 0's node for a free MASTER_PORT, launch every node's ranks, follow
// their exits, and when the gang is down decide: succeed, retry, fail, stop.
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "common/logging.h"
#include "common/resources.h"
#include "common/session.h"
#include "daemon/head/dvclive_writer.h"
#include "daemon/head/job_manager.h"
#include "daemon/head/rank_env.h"

namespace clusterd {

namespace {

AttemptInfo& Current(JobInfo& info) { return *info.mutable_attempts()->rbegin(); }
const AttemptInfo& Current(const JobInfo& info) { return *info.attempts().rbegin(); }

std::string DescribeExit(int exit_code, int signal) {
  return signal != 0 ? fmt::format("was killed by signal {}", signal) : fmt::format("exited with code {}", exit_code);
}

}  // namespace

bool JobManager::IsCurrent(const Job& job, const std::string& job_id, int attempt) const {
  return job.active && job.info.job_id() == job_id && job.info.attempts_size() > 0 &&
         Current(job.info).attempt() == attempt;
}

void JobManager::StartAttempt(Job& job, const std::vector<std::pair<std::string, int>>& plan) {
  AttemptInfo attempt;
  attempt.set_attempt(job.info.attempts_size());
  attempt.set_start_unix_ms(clock_->UnixMillis());
  job.run = Run();
  job.run.started_at = clock_->NowMicros();
  int rank = 0;
  for (size_t node_rank = 0; node_rank < plan.size(); ++node_rank) {
    const auto& [node_id, count] = plan[node_rank];
    const NodeInfo* node = nodes_->Find(node_id);
    for (int local = 0; local < count; ++local, ++rank) {
      Slot slot;
      slot.node_id = node_id;
      slot.incarnation = node->incarnation();
      // The plan was made from these very amounts on this loop turn, so the
      // allocation holds; a failure here is a bug worth a loud log.
      slot.allocated = nodes_->TryAllocate(node_id, job.info.spec().resources_per_worker(), &slot.gpus);
      if (!slot.allocated) LOG_ERROR("job {}: allocation on {} failed after planning", job.info.job_id(), node_id);
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
  job.active = true;
  SetState(job, RUNNING,
           attempt.attempt() == 0 ? "placed" : fmt::format("attempt {} placed", attempt.attempt()));
  for (const auto& r : attempt.ranks()) {
    logs_->Append(job.info.job_id(), r.rank(),
                  fmt::format("--- attempt {} on {} ---\n", attempt.attempt(), r.node_name()));
  }
  HeadMessage reserve;
  reserve.mutable_reserve_port()->set_job_id(job.info.job_id());
  reserve.mutable_reserve_port()->set_attempt(attempt.attempt());
  if (!send_(plan.front().first, reserve)) {
    EndAttempt(job, Ending::kFail, fmt::format("node {} of rank 0 has no open stream", master->name()));
  }
}

void JobManager::OnPortReserved(const std::string& node_id, const PortReserved& message) {
  Job* job = Find(message.job_id());
  if (!job || !IsCurrent(*job, message.job_id(), message.attempt()) || job->run.port_reserved) return;
  job->run.port_reserved = true;
  if (job->run.ending != Ending::kNone) {  // stopped while the port was being found
    for (size_t rank = 0; rank < job->run.slots.size(); ++rank) job->run.exited.insert(static_cast<int>(rank));
    MaybeFinish(*job);
    return;
  }
  Current(job->info).set_master_port(message.port());
  Launch(*job);
}

void JobManager::Launch(Job& job) {
  const AttemptInfo& attempt = Current(job.info);
  std::map<std::string, LaunchRanks> per_node;  // one message per node
  std::map<std::string, int> local_world;
  for (const auto& rank : attempt.ranks()) ++local_world[rank.node_id()];
  for (const auto& rank : attempt.ranks()) {
    LaunchRanks& launch = per_node[rank.node_id()];
    if (launch.argv().empty()) {
      launch.set_job_id(job.info.job_id());
      launch.set_attempt(attempt.attempt());
      *launch.mutable_argv() = job.info.spec().entrypoint();
      if (ShipsPackage(job.info.spec())) {
        launch.set_package_id(job.info.spec().package_id());
        launch.set_package_bytes(job.info.spec().package_bytes());
      } else {
        launch.set_working_dir(job.info.spec().working_dir());
      }
    }
    RankLaunch* r = launch.add_ranks();
    r->set_rank(rank.rank());
    const NodeInfo* node = nodes_->Find(rank.node_id());
    auto env = RankEnvironment(job.info, attempt, rank, local_world[rank.node_id()], node ? node->address() : "");
    r->mutable_env()->insert(env.begin(), env.end());
  }
  for (auto& [node_id, launch] : per_node) {
    HeadMessage message;
    *message.mutable_launch() = std::move(launch);
    if (!send_(node_id, message)) {
      EndAttempt(job, Ending::kFail, fmt::format("could not reach node {} to launch ranks", node_id));
      return;
    }
  }
}

void JobManager::OnRankStarted(const std::string&, const RankStarted& message) {
  Job* job = Find(message.job_id());
  if (!job || !IsCurrent(*job, message.job_id(), message.attempt())) return;
  int rank = message.rank();
  if (rank < 0 || rank >= Current(job->info).ranks_size()) return;
  Current(job->info).mutable_ranks(rank)->set_pid(message.pid());
  job->run.started.insert(rank);
}

void JobManager::OnRankExited(const std::string& node_id, const RankExited& message) {
  Job* job = Find(message.job_id());
  if (!job || !IsCurrent(*job, message.job_id(), message.attempt())) return;
  int rank = message.rank();
  if (rank < 0 || rank >= Current(job->info).ranks_size() || job->run.exited.count(rank)) return;
  RankInfo* info = Current(job->info).mutable_ranks(rank);
  info->set_exited(true);
  info->set_exit_code(message.exit_code());
  info->set_signal(message.signal());
  bool clean = message.exit_code() == 0 && message.signal() == 0 && message.error().empty();
  if (!clean && job->run.ending == Ending::kNone) {
    std::string what = message.error().empty() ? DescribeExit(message.exit_code(), message.signal())
                                               : "could not start: " + message.error();
    std::string tail = message.log_tail().empty() ? logs_->Tail(job->info.job_id(), rank, config_.log_tail_lines)
                                                  : message.log_tail();
    std::string reason = fmt::format("rank {} {} on node {} (attempt {})", rank, what, info->node_name(),
                                     Current(job->info).attempt());
    if (!tail.empty()) reason += "; last log lines:\n" + tail;
    EndAttempt(*job, Ending::kFail, reason);
  }
  MarkExited(*job, rank);
}

void JobManager::OnNodeDead(const NodeInfo& node) {
  for (auto& [id, job] : jobs_) {
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
    if (job.run.ending == Ending::kNone) {
      EndAttempt(job, Ending::kFail,
                 fmt::format("node {} died ({}) with rank{} {} of attempt {}", node.name(), node.state_reason(),
                             lost.size() == 1 ? "" : "s", fmt::join(lost, ","), Current(job.info).attempt()));
    }
    for (int rank : lost) {
      job.run.slots[rank].allocated = false;  // the node's table entry was reset
      MarkExited(job, rank);
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
  job.active = false;
  Current(job.info).set_end_unix_ms(clock_->UnixMillis());
  int attempt = Current(job.info).attempt();
  switch (job.run.ending) {
    case Ending::kSucceed:
      SetState(job, SUCCEEDED, fmt::format("all {} ranks exited 0 (attempt {})", job.run.slots.size(), attempt));
      break;
    case Ending::kStop:
      SetState(job, STOPPED, job.run.ending_reason);
      break;
    case Ending::kFail:
      if (job.run.retry && attempt < job.info.spec().max_failures()) {
        SetState(job, RESTARTING, fmt::format("attempt {} failed: {}", attempt, job.run.ending_reason));
        queue_.push_front(job.info.job_id());  // a retry goes before newer jobs
      } else {
        SetState(job, FAILED, job.run.ending_reason);
      }
      break;
    case Ending::kNone:
      break;
  }
  Schedule();
}

void JobManager::OnMetrics(const std::string&, const MetricsReport& message) {
  Job* job = Find(message.job_id());
  if (!job) return;
  MetricRecord record;
  record.set_attempt(message.attempt());
  record.set_rank(message.rank());
  int64_t index = 0;
  for (const auto& r : job->metrics) index += r.attempt() == message.attempt() ? 1 : 0;
  record.set_index(index);
  record.set_unix_ms(message.unix_ms() ? message.unix_ms() : clock_->UnixMillis());
  *record.mutable_values() = message.values();
  record.set_checkpoint(message.checkpoint());
  job->metrics.push_back(record);
  JournalEntry entry;
  entry.set_unix_ms(clock_->UnixMillis());
  entry.set_job_id(job->info.job_id());
  *entry.mutable_metric() = record;
  Status st = store_->Append(entry);
  if (!st.ok()) LOG_ERROR("journal: could not record a metric of job {}: {}", job->info.job_id(), st.ToString());
  if (!message.checkpoint().empty()) job->info.set_latest_checkpoint(message.checkpoint());
  const std::string& dvclive = job->info.spec().dvclive_dir();
  if (!dvclive.empty()) {
    std::string dir = JoinPath(job->info.spec().working_dir(), dvclive);
    Status wrote = WriteDvcLive(dir, record);
    if (!wrote.ok()) LOG_WARN("job {}: DVCLive output: {}", job->info.job_id(), wrote.ToString());
  }
}

Micros JobManager::Tick() {
  Micros now = clock_->NowMicros();
  Micros next = 0;
  auto want = [&next](Micros at) { next = next == 0 ? at : std::min(next, at); };
  for (auto& [id, job] : jobs_) {
    if (!job.active) continue;
    if (job.run.adopting) {
      if (now >= job.run.adopt_deadline) {
        job.run.adopting = false;
        std::vector<int> missing;
        for (size_t rank = 0; rank < job.run.slots.size(); ++rank) {
          if (!job.run.started.count(static_cast<int>(rank))) {
            missing.push_back(static_cast<int>(rank));
            job.run.exited.insert(static_cast<int>(rank));
          }
        }
        EndAttempt(job, Ending::kFail,
                   fmt::format("rank{} {} did not come back after the head restarted",
                               missing.size() == 1 ? "" : "s", fmt::join(missing, ",")));
      } else {
        want(job.run.adopt_deadline);
      }
      continue;
    }
    double timeout_s = job.info.spec().timeout_s();
    if (timeout_s > 0 && job.run.ending == Ending::kNone) {
      Micros deadline = job.run.started_at + static_cast<Micros>(timeout_s * 1e6);
      if (now >= deadline) {
        job.run.retry = false;  // the timeout is for the whole job, not per attempt
        EndAttempt(job, Ending::kFail, fmt::format("timed out after {} s", timeout_s));
      } else {
        want(deadline);
      }
    }
  }
  return next;
}

void JobManager::AdoptRanks(const NodeInfo& node, const RegisterNode& request) {
  std::map<std::string, std::vector<LiveRank>> orphans;  // job id -> ranks nobody wants
  for (const LiveRank& live : request.live_ranks()) {
    Job* job = Find(live.job_id());
    bool wanted = job && job->run.adopting && IsCurrent(*job, live.job_id(), live.attempt()) &&
                  live.rank() >= 0 && live.rank() < Current(job->info).ranks_size() &&
                  Current(job->info).ranks(live.rank()).node_name() == node.name();
    if (!wanted) {
      orphans[live.job_id() + "\n" + std::to_string(live.attempt())].push_back(live);
      continue;
    }
    RankInfo* info = Current(job->info).mutable_ranks(live.rank());
    info->set_node_id(node.node_id());
    info->set_pid(live.pid());
    Slot& slot = job->run.slots[live.rank()];
    slot.node_id = node.node_id();
    slot.incarnation = node.incarnation();
    slot.allocated = nodes_->TryAllocate(node.node_id(), job->info.spec().resources_per_worker(), &slot.gpus);
    job->run.started.insert(live.rank());
    if (job->run.started.size() == job->run.slots.size()) {
      job->run.adopting = false;
      LOG_INFO("job {}: adopted all {} ranks of attempt {} after the head restarted", job->info.job_id(),
               job->run.slots.size(), Current(job->info).attempt());
      Persist(*job);
    }
  }
  // Ranks of jobs that ended or moved on while this node was away: stop them.
  for (const auto& [key, ranks] : orphans) {
    HeadMessage kill;
    kill.mutable_kill()->set_job_id(ranks.front().job_id());
    kill.mutable_kill()->set_attempt(ranks.front().attempt());
    kill.mutable_kill()->set_grace_ms(config_.stop_grace_ms);
    LOG_INFO("node {}: stopping {} orphaned rank(s) of job {} attempt {}", node.name(), ranks.size(),
             ranks.front().job_id(), ranks.front().attempt());
    send_(node.node_id(), kill);
  }
}

}  // namespace clusterd
