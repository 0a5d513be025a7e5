#include "daemon/head/job_adoption.h"

#include <malloc.h>

#include <algorithm>
#include <map>
#include <vector>

#include <fmt/format.h>

#include "common/logging.h"
#include "common/resources.h"
#include "daemon/head/job_replay.h"

namespace clusterd {
Status JobAdoption::Restore() {
  ASSIGN_OR_RETURN(std::vector<JournalEntry> entries, parts_.store->LoadAll());
  ReplayedJobs replayed = ReplayJobs(entries);
  std::vector<JournalEntry>().swap(entries);  // replayed: its memory goes before the jobs are made
  // By job number: the order they were submitted in, whatever the wall
  // clock did meanwhile (an array's jobs stay neighbours, as ListPage needs).
  // Each number is read once, not at every comparison: with a million jobs
  // that parse is a quarter of the restart.
  struct Submitted {
    int number;
    JobInfo* info;
  };
  std::vector<Submitted> sorted;
  sorted.reserve(replayed.jobs.size());
  for (auto& [id, info] : replayed.jobs) sorted.push_back({JobTable::JobNumber(info.job_id()), &info});
  std::sort(sorted.begin(), sorted.end(), [](const Submitted& a, const Submitted& b) {
    if (a.number != b.number) return a.number < b.number;
    return a.info->submit_unix_ms() != b.info->submit_unix_ms() ? a.info->submit_unix_ms() < b.info->submit_unix_ms()
                                                                : a.info->job_id() < b.info->job_id();
  });
  std::vector<JobInfo*> by_submission;
  by_submission.reserve(sorted.size());
  for (const Submitted& job : sorted) by_submission.push_back(job.info);
  std::vector<Submitted>().swap(sorted);
  parts_.table->Reserve(by_submission.size());
  parts_.table->KeepJobNumbersFrom(replayed.next_job_number);
  // Long enough for every agent to notice, back off, reconnect and
  // register on a loaded machine (5 s is too short under load), and no
  // shorter than the node table waits for its restored nodes (a new HA
  // leader's ha_node_return_ms); a rank that is not back by then is taken
  // for lost.
  const Micros adopt_window = std::max<Micros>(
      {10'000'000, (3LL * config_.node_timeout_ms + 2LL * config_.reconnect_max_ms) * 1000,
       parts_.nodes->restored_grace() + 2LL * config_.reconnect_max_ms * 1000});
  Micros adopt_deadline = clock_->NowMicros() + adopt_window;
  std::vector<const JobInfo*> restored;  // the jobs' own records, moved out of `replayed`
  restored.reserve(by_submission.size());
  std::vector<TrackedJob*> made_jobs;  // the same jobs, in submission order
  made_jobs.reserve(by_submission.size());
  for (JobInfo* replayed_info : by_submission) {
    TrackedJob job;
    job.info = std::move(*replayed_info);
    const JobInfo* info = &job.info;  // until the job moves into the table below
    if (auto reports = replayed.metrics.find(info->job_id()); reports != replayed.metrics.end()) {
      job.metrics = std::move(reports->second);
    }
    for (const MetricRecord& record : job.metrics) parts_.results->RestoredMetric(record);
    parts_.table->KeepJobNumbersFrom(JobTable::JobNumber(info->job_id()) + 1);
    std::string id = info->job_id();
    JobState state = info->state();
    if (state == RUNNING && info->attempts_size() > 0) {
      // Its ranks may still run: wait for their agents to say so.
      parts_.arrays->SetActive(job, true);
      job.run.adopting = true;
      job.run.port_reserved = true;
      job.run.adopt_deadline = adopt_deadline;
      job.run.slots.resize(info->attempts().rbegin()->ranks_size());
      // The attempt's own start, as journalled: a head restart must not give
      // a job with a timeout that much more time.
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
        // is retried as it would have been, whatever the others' clean exits.
        if ((ended.exit_code() != 0 || ended.signal() != 0) && job.run.ending == AttemptEnding::kNone) {
          job.run.ending = AttemptEnding::kFail;
          job.run.ending_reason =
              fmt::format("rank {} {} on node {} (attempt {}), before the head restarted", rank,
                          DescribeExit(ended.exit_code(), ended.signal()), ended.node_name(), current.attempt());
          job.info.mutable_attempts()->rbegin()->set_failure_reason(job.run.ending_reason);
        }
      }
      // Ranks whose log already opens this attempt get no second banner.
      const int attempt = info->attempts().rbegin()->attempt();
      for (int rank = 0; rank < static_cast<int>(job.run.slots.size()); ++rank) {
        if (parts_.logs->LastAttempt(info->job_id(), rank) == attempt) job.run.bannered.insert(rank);
      }
    }
    // A retry still waiting out its restart delay waits for the rest of it.
    int64_t wait_ms = state == RESTARTING ? info->retry_at_unix_ms() - clock_->UnixMillis() : 0;
    if (wait_ms > 0) job.retry_at = clock_->NowMicros() + wait_ms * 1000;
    parts_.data->Restore(&job.info);
    // An INFEASIBLE one joins its shape (InfeasibleShapes), not the queue:
    // the next Tick judges each shape once against the nodes that have
    // registered by then.
    TrackedJob& made = parts_.table->Add(std::move(job));
    restored.push_back(&made.info);
    made_jobs.push_back(&made);
    if (!made.info.spec().submission_id().empty()) parts_.table->IndexSubmission(made.info.spec().submission_id(), id);
    if ((state == PENDING || state == RESTARTING) && wait_ms <= 0) parts_.table->queue().push_back(id);
  }
  // Once every array's unfinished jobs are counted: the final ones are
  // retention's (Tick deletes those beyond max_finished_jobs).
  for (TrackedJob* job : made_jobs) {
    if (IsTerminal(job->info.state())) parts_.retention->RestoredFinal(*job);
  }
  LOG_INFO("journal: restored {} jobs ({} queued, {} shapes of INFEASIBLE jobs)", parts_.table->size(),
           parts_.table->queue().size(), parts_.infeasible->size());
  // The packs may still hold logs of jobs deleted before this start.
  parts_.logs->ForgetJobsExcept([this](const std::string& job_id) { return parts_.table->Find(job_id) != nullptr; });
  // Last, with every job in place: it may compact the journal it came from.
  parts_.table->journal().Restored(restored);
  // The journal's entries and the replay's copies are gone: their pages go
  // back to the system, not kept as the high-water mark of a restart.
  malloc_trim(0);
  return Status::Ok();
}

void JobAdoption::AdoptRanks(const NodeInfo& node, const RegisterNode& request) {
  std::map<std::string, std::vector<LiveRank>> orphans;  // job id -> ranks nobody wants
  for (const LiveRank& live : request.live_ranks()) {
    TrackedJob* job = parts_.table->Find(live.job_id());
    bool wanted = job && job->run.adopting && IsCurrent(*job, live.job_id(), live.attempt()) &&
                  live.rank() >= 0 && live.rank() < CurrentAttempt(job->info).ranks_size() &&
                  CurrentAttempt(job->info).ranks(live.rank()).node_name() == node.name();
    if (!wanted) {
      orphans[live.job_id() + "\n" + std::to_string(live.attempt())].push_back(live);
      HoldRemnant(node, live);
      continue;
    }
    RankInfo* info = CurrentAttempt(job->info).mutable_ranks(live.rank());
    info->set_node_id(node.node_id());
    info->set_pid(live.pid());
    RankSlot& slot = job->run.slots[live.rank()];
    slot.node_id = node.node_id();
    slot.incarnation = node.incarnation();
    // Exactly the GPUs it runs on, as journalled: not whichever are free now.
    slot.gpus.assign(info->gpus().begin(), info->gpus().end());
    slot.allocated = parts_.nodes->TryAllocateExact(node.node_id(), job->info.spec().resources_per_worker(), slot.gpus);
    if (!slot.allocated) {
      LOG_WARN("job {}: rank {} adopted on {}, but its share ({}, GPUs {}) is not free there", job->info.job_id(),
               live.rank(), node.name(), FormatResources(job->info.spec().resources_per_worker()),
               fmt::join(slot.gpus, ","));
    }
    job->run.started.insert(live.rank());
    if (job->run.started.size() == job->run.slots.size()) {
      job->run.adopting = false;
      LOG_INFO("job {}: adopted all {} ranks of attempt {} after the head restarted", job->info.job_id(),
               job->run.slots.size(), CurrentAttempt(job->info).attempt());
      parts_.table->Persist(*job);
      // It was ending: the rest stop as they would have.
      if (job->run.ending != AttemptEnding::kNone) parts_.launch->KillRanks(*job);
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

// A rank that exits while the head is down is not live when its agent
// registers again, so AdoptRanks never gives its slot a node: the exit the
// agent kept and sends right after registering must still count, or the
// job would fail at the adoption deadline although it had finished.
bool JobAdoption::AdoptExitedRank(TrackedJob& job, const std::string& node_id, int rank) {
  if (!PlacedOn(job, *parts_.nodes, node_id, rank)) return false;
  const NodeInfo* node = parts_.nodes->Find(node_id);
  RankSlot& slot = job.run.slots[rank];
  slot.node_id = node_id;
  slot.incarnation = node->incarnation();
  CurrentAttempt(job.info).mutable_ranks(rank)->set_node_id(node_id);
  job.run.started.insert(rank);
  if (job.run.started.size() == job.run.slots.size()) {
    job.run.adopting = false;
    LOG_INFO("job {}: adopted all {} ranks of attempt {} after the head restarted (some had exited)",
             job.info.job_id(), job.run.slots.size(), CurrentAttempt(job.info).attempt());
    // It was ending: the rest stop as they would have.
    if (job.run.ending != AttemptEnding::kNone) parts_.launch->KillRanks(job);
  }
  return true;
}

void JobAdoption::HoldRemnant(const NodeInfo& node, const LiveRank& live) {
  // A rank of an attempt that is over still runs there until the kill lands:
  // its share stays taken, or a new rank would be given the same GPUs.
  const TrackedJob* job = parts_.table->Find(live.job_id());
  if (!job || live.attempt() < 0 || live.attempt() >= job->info.attempts_size()) return;
  const AttemptInfo& attempt = job->info.attempts(live.attempt());
  if (live.rank() < 0 || live.rank() >= attempt.ranks_size()) return;
  RankSlot slot;
  slot.node_id = node.node_id();
  slot.incarnation = node.incarnation();
  slot.gpus.assign(attempt.ranks(live.rank()).gpus().begin(), attempt.ranks(live.rank()).gpus().end());
  slot.allocated = parts_.nodes->TryAllocateExact(node.node_id(), job->info.spec().resources_per_worker(), slot.gpus);
  if (slot.allocated) remnants_[{node.node_id(), live.job_id(), live.attempt(), live.rank()}] = slot;
}

void JobAdoption::ReleaseRemnant(const std::string& node_id, const RankExited& message) {
  auto it = remnants_.find({node_id, message.job_id(), message.attempt(), message.rank()});
  if (it == remnants_.end()) return;
  const TrackedJob* job = parts_.table->Find(message.job_id());
  if (job) {
    parts_.nodes->Release(it->second.node_id, it->second.incarnation, job->info.spec().resources_per_worker(),
                          it->second.gpus);
  }
  remnants_.erase(it);
  schedule_();  // what waited for that share may run now
}

void JobAdoption::OnNodeDead(const NodeInfo& node) {
  for (auto it = remnants_.begin(); it != remnants_.end();) {
    it = std::get<0>(it->first) == node.node_id() ? remnants_.erase(it) : std::next(it);
  }
}

}  // namespace clusterd
