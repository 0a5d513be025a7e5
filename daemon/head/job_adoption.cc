// JobManager, part four: a restarted head. The journal is replayed, running
// jobs wait for their agents to report their ranks (adopted when all come
// back, restarted otherwise), and Tick runs adoption deadlines and timeouts.
#include <malloc.h>

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "common/logging.h"
#include "common/resources.h"
#include "daemon/head/job_manager.h"
#include "daemon/head/job_replay.h"

namespace clusterd {

Status JobManager::Restore() {
  ASSIGN_OR_RETURN(std::vector<JournalEntry> entries, store_->LoadAll());
  ReplayedJobs replayed = ReplayJobs(entries);
  std::vector<JournalEntry>().swap(entries);  // replayed: its memory goes before the jobs are made
  // By job number: the order they were submitted in, whatever the wall
  // clock did meanwhile (an array's jobs stay neighbours, as ListPage needs).
  // Each number is read once, not at every comparison: with a million jobs
  // that parse was a quarter of the restart.
  struct Submitted {
    int number;
    JobInfo* info;
  };
  std::vector<Submitted> sorted;
  sorted.reserve(replayed.jobs.size());
  for (auto& [id, info] : replayed.jobs) sorted.push_back({JobNumber(info.job_id()), &info});
  std::sort(sorted.begin(), sorted.end(), [](const Submitted& a, const Submitted& b) {
    if (a.number != b.number) return a.number < b.number;
    return a.info->submit_unix_ms() != b.info->submit_unix_ms() ? a.info->submit_unix_ms() < b.info->submit_unix_ms()
                                                                : a.info->job_id() < b.info->job_id();
  });
  std::vector<JobInfo*> by_submission;
  by_submission.reserve(sorted.size());
  for (const Submitted& job : sorted) by_submission.push_back(job.info);
  std::vector<Submitted>().swap(sorted);
  jobs_.reserve(jobs_.size() + by_submission.size());
  next_job_number_ = std::max(next_job_number_, replayed.next_job_number);
  // Long enough for every agent to notice, back off, reconnect and
  // register on a loaded machine (5 s was missed under load in the tests);
  // a rank that is not back by then is taken for lost.
  const Micros adopt_window = std::max<Micros>(
      10'000'000, (3LL * config_.node_timeout_ms + 2LL * config_.reconnect_max_ms) * 1000);
  Micros adopt_deadline = clock_->NowMicros() + adopt_window;
  std::vector<const JobInfo*> restored;  // the jobs' own records, moved out of `replayed`
  restored.reserve(by_submission.size());
  std::vector<Job*> made_jobs;  // the same jobs, in order_'s order
  made_jobs.reserve(by_submission.size());
  for (JobInfo* replayed_info : by_submission) {
    Job job;
    job.info = std::move(*replayed_info);
    const JobInfo* info = &job.info;  // until the job moves into jobs_ below
    if (auto reports = replayed.metrics.find(info->job_id()); reports != replayed.metrics.end()) {
      job.metrics = std::move(reports->second);
    }
    for (const MetricRecord& record : job.metrics) metric_seq_ = std::max(metric_seq_, record.received_seq());
    next_job_number_ = std::max(next_job_number_, JobNumber(info->job_id()) + 1);
    std::string id = info->job_id();
    JobState state = info->state();
    if (state == RUNNING && info->attempts_size() > 0) {
      // Its ranks may still run: wait for their agents to say so.
      SetActive(job, true);
      job.run.adopting = true;
      job.run.port_reserved = true;
      job.run.adopt_deadline = adopt_deadline;
      job.run.slots.resize(info->attempts().rbegin()->ranks_size());
      // The attempt's own start, as journalled: found by exploratory testing,
      // a head restart gave a job with a timeout that much more time.
      const int64_t started_ms = info->attempts().rbegin()->start_unix_ms();
      const int64_t ran_ms = started_ms > 0 ? std::max<int64_t>(0, clock_->UnixMillis() - started_ms) : 0;
      job.run.started_at = clock_->NowMicros() - ran_ms * 1000;
      // Ranks that exited before the restart (RankEnd): their agents told
      // of it already; only the others are waited for.
      const AttemptInfo& current = *info->attempts().rbegin();
      for (int rank = 0; rank < current.ranks_size(); ++rank) {
        const RankInfo& ended = current.ranks(rank);
        if (!ended.exited()) continue;
        job.run.exited.insert(rank);
        job.run.started.insert(rank);
        // One that failed had begun ending the attempt: it still fails, and
        // is retried as it would have been. Found by exploratory testing:
        // the others' clean exits made it SUCCEED, its retry lost.
        if ((ended.exit_code() != 0 || ended.signal() != 0) && job.run.ending == Ending::kNone) {
          job.run.ending = Ending::kFail;
          job.run.ending_reason =
              fmt::format("rank {} {} on node {} (attempt {}), before the head restarted", rank,
                          DescribeExit(ended.exit_code(), ended.signal()), ended.node_name(), current.attempt());
          job.info.mutable_attempts()->rbegin()->set_failure_reason(job.run.ending_reason);
        }
      }
      // Ranks whose log already opens this attempt get no second banner.
      const int attempt = info->attempts().rbegin()->attempt();
      for (int rank = 0; rank < static_cast<int>(job.run.slots.size()); ++rank) {
        if (logs_->LastAttempt(info->job_id(), rank) == attempt) job.run.bannered.insert(rank);
      }
    }
    // A retry still waiting out its restart delay waits for the rest of it.
    int64_t wait_ms = state == RESTARTING ? info->retry_at_unix_ms() - clock_->UnixMillis() : 0;
    if (wait_ms > 0) job.retry_at = clock_->NowMicros() + wait_ms * 1000;
    data_.Restore(&job.info);
    job.seq = next_seq_++;
    Job& made = jobs_.emplace(id, std::move(job)).first->second;
    restored.push_back(&made.info);
    made_jobs.push_back(&made);
    TallyArrayJob(made, state, 1);
    if (!IsTerminal(state)) MarkUnfinished(made);
    UpdateTimed(made);
    UpdateDemand(made);
    order_.push_back(id);
    if (!made.info.spec().submission_id().empty()) by_submission_[made.info.spec().submission_id()] = id;
    if (state == INFEASIBLE) {
      // With its shape, not in the queue: the next Tick judges each shape
      // once against the nodes that have registered by then.
      EnterInfeasible(made, made.info.reason());
      infeasible_stale_ = true;
    } else if ((state == PENDING || state == RESTARTING) && wait_ms <= 0) {
      queue_.push_back(id);
    }
  }
  // Once every array's unfinished jobs are counted: the final ones are
  // retention's (Tick deletes those beyond max_finished_jobs).
  for (Job* job : made_jobs) {
    if (IsTerminal(job->info.state())) MarkFinished(*job);
  }
  LOG_INFO("journal: restored {} jobs ({} queued, {} shapes of INFEASIBLE jobs)", jobs_.size(), queue_.size(),
           infeasible_.size());
  // The packs may still hold logs of jobs deleted before this start.
  logs_->ForgetJobsExcept([this](const std::string& job_id) { return jobs_.count(job_id) > 0; });
  // Last, with every job in place: it may compact the journal it came from.
  journal_.Restored(restored);
  // The journal's entries and the replay's copies are gone: their pages go
  // back to the system, not kept as the high-water mark of a restart.
  malloc_trim(0);
  return Status::Ok();
}

Micros JobManager::Tick() {
  Micros now = clock_->NowMicros();
  Micros next = 0;
  auto want = [&next](Micros at) { next = next == 0 ? at : std::min(next, at); };
  if (Micros retry = journal_.Tick()) want(retry);
  // First, while no job is walked: deleting finished jobs frees what a
  // walk below might point at otherwise.
  if (Retire()) want(now);
  bool retries = false;
  // Ending an attempt here may end other jobs too (a sweep's scheduler
  // stops trials); no job is erased from jobs_ during this walk. Only the
  // running and restarting have deadlines: the queue is not walked.
  for (Job* walked : TimedNow()) {
    Job& job = *walked;
    const std::string& id = job.info.job_id();
    if (job.retry_at != 0) {
      if (now >= job.retry_at) {
        // Its restart delay is over: first in line, as a retry is.
        job.retry_at = 0;
        job.info.set_retry_at_unix_ms(0);
        queue_.push_front(id);
        retries = true;
      } else {
        want(job.retry_at);
      }
    }
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
        if (missing.empty()) {
          // Every rank had exited before the restart, the attempt's end not
          // journalled yet: a failed one set its ending at Restore.
          if (job.run.ending == Ending::kNone) job.run.ending = Ending::kSucceed;
          MaybeFinish(job);
          continue;
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
      // Clamped: a timeout of years must not overflow into the past.
      constexpr double kMaxTimeoutMicros = 1e17;  // about 3000 years
      Micros deadline = job.run.started_at + static_cast<Micros>(std::min(timeout_s * 1e6, kMaxTimeoutMicros));
      if (now >= deadline) {
        job.run.retry = false;  // a timed-out attempt is not tried again: the job fails
        EndAttempt(job, Ending::kFail, fmt::format("timed out after {} s", timeout_s));
      } else {
        want(deadline);
      }
    }
  }
  // Nodes joined that could not make an infeasible job fit: its reason
  // still counts the nodes as they were.
  if (infeasible_stale_) {
    infeasible_stale_ = false;
    FreedJobs freed;
    for (auto shape = infeasible_.begin(); shape != infeasible_.end();) shape = JudgeShape(shape, &freed);
    RequeueFreed(freed);
    retries = true;
  }
  if (retries) Schedule();
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
      HoldRemnant(node, live);
      continue;
    }
    RankInfo* info = Current(job->info).mutable_ranks(live.rank());
    info->set_node_id(node.node_id());
    info->set_pid(live.pid());
    Slot& slot = job->run.slots[live.rank()];
    slot.node_id = node.node_id();
    slot.incarnation = node.incarnation();
    // Exactly the GPUs it runs on, as journalled: not whichever are free now.
    slot.gpus.assign(info->gpus().begin(), info->gpus().end());
    slot.allocated = nodes_->TryAllocateExact(node.node_id(), job->info.spec().resources_per_worker(), slot.gpus);
    if (!slot.allocated) {
      LOG_WARN("job {}: rank {} adopted on {}, but its share ({}, GPUs {}) is not free there", job->info.job_id(),
               live.rank(), node.name(), FormatResources(job->info.spec().resources_per_worker()),
               fmt::join(slot.gpus, ","));
    }
    job->run.started.insert(live.rank());
    if (job->run.started.size() == job->run.slots.size()) {
      job->run.adopting = false;
      LOG_INFO("job {}: adopted all {} ranks of attempt {} after the head restarted", job->info.job_id(),
               job->run.slots.size(), Current(job->info).attempt());
      Persist(*job);
      if (job->run.ending != Ending::kNone) KillRanks(*job);  // it was ending: the rest stop as they would have
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

// By name: the ids a restarted head gives the nodes that register again
// need not be those its journal recorded (AdoptExitedRank sets them anew).
bool JobManager::PlacedOn(const Job& job, const std::string& node_id, int rank) const {
  const NodeInfo* node = nodes_->Find(node_id);
  return node && rank >= 0 && rank < Current(job.info).ranks_size() &&
         Current(job.info).ranks(rank).node_name() == node->name();
}

bool JobManager::SpeaksForRank(const Job& job, const std::string& node_id, int rank) const {
  if (RunsRank(job, node_id, rank)) return true;
  return job.run.adopting && PlacedOn(job, node_id, rank);
}

// Found by bench/chaos: a rank that exits while the head is down is not
// live when its agent registers again, so AdoptRanks never gives its slot a
// node; the exit the agent kept and sends right after registering was then
// ignored as coming from a node that does not run it, and the job failed at
// the adoption deadline with "did not come back" although it had finished.
bool JobManager::AdoptExitedRank(Job& job, const std::string& node_id, int rank) {
  if (!PlacedOn(job, node_id, rank)) return false;
  const NodeInfo* node = nodes_->Find(node_id);
  Slot& slot = job.run.slots[rank];
  slot.node_id = node_id;
  slot.incarnation = node->incarnation();
  Current(job.info).mutable_ranks(rank)->set_node_id(node_id);
  job.run.started.insert(rank);
  if (job.run.started.size() == job.run.slots.size()) {
    job.run.adopting = false;
    LOG_INFO("job {}: adopted all {} ranks of attempt {} after the head restarted (some had exited)",
             job.info.job_id(), job.run.slots.size(), Current(job.info).attempt());
    if (job.run.ending != Ending::kNone) KillRanks(job);  // it was ending: the rest stop as they would have
  }
  return true;
}

void JobManager::HoldRemnant(const NodeInfo& node, const LiveRank& live) {
  // A rank of an attempt that is over still runs there until the kill lands:
  // its share stays taken, or a new rank would be given the same GPUs.
  const Job* job = Find(live.job_id());
  if (!job || live.attempt() < 0 || live.attempt() >= job->info.attempts_size()) return;
  const AttemptInfo& attempt = job->info.attempts(live.attempt());
  if (live.rank() < 0 || live.rank() >= attempt.ranks_size()) return;
  Slot slot;
  slot.node_id = node.node_id();
  slot.incarnation = node.incarnation();
  slot.gpus.assign(attempt.ranks(live.rank()).gpus().begin(), attempt.ranks(live.rank()).gpus().end());
  slot.allocated = nodes_->TryAllocateExact(node.node_id(), job->info.spec().resources_per_worker(), slot.gpus);
  if (slot.allocated) remnants_[{node.node_id(), live.job_id(), live.attempt(), live.rank()}] = slot;
}

void JobManager::ReleaseRemnant(const std::string& node_id, const RankExited& message) {
  auto it = remnants_.find({node_id, message.job_id(), message.attempt(), message.rank()});
  if (it == remnants_.end()) return;
  const Job* job = Find(message.job_id());
  if (job) {
    nodes_->Release(it->second.node_id, it->second.incarnation, job->info.spec().resources_per_worker(),
                    it->second.gpus);
  }
  remnants_.erase(it);
  Schedule();  // what waited for that share may run now
}

}  // namespace clusterd
