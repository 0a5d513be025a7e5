#include "daemon/head/preemption/preemption.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "common/logging.h"
#include "daemon/head/job_shape.h"

namespace clusterd {

Preemption::Preemption(const Clock* clock, const Config& config, JobTable* table, NodeTable* nodes,
                       JobAttempts* attempts, const JobLaunch* launch, SendFn send)
    : clock_(clock),
      config_(config),
      table_(table),
      nodes_(nodes),
      attempts_(attempts),
      send_(std::move(send)),
      resume_wait_(clock, config, table, launch) {}

int Preemption::GraceMs(const JobSpec& spec) const {
  const double asked_s = spec.preemption_grace_s() > 0 ? spec.preemption_grace_s() : config_.preemption_grace_default_s;
  const double capped_s = std::min(asked_s, static_cast<double>(std::max(0, config_.preemption_grace_max_s)));
  return static_cast<int>(capped_s * 1000);
}

Status Preemption::CheckSpec(const JobSpec& spec, const std::string& owner) const {
  if (spec.preemption_grace_s() > config_.preemption_grace_max_s) {
    return Status::InvalidArgument(fmt::format(
        "key 'preemption_grace_s': {} s is more than this cluster allows a preempted job to hold another's room "
        "({} s, preemption_grace_max_s)",
        spec.preemption_grace_s(), config_.preemption_grace_max_s));
  }
  const int64_t priority = PriorityOf(spec);
  // No owner yet (a sweep or a batch checks its specs before submitting
  // them): the rule is checked at each job's submit, which knows it.
  if (!owner.empty() && spec.not_preemptible() && priority > config_.preemption_exempt_max_priority &&
      !(policy_.is_admin && policy_.is_admin(owner))) {
    return Status::PermissionDenied(fmt::format(
        "key 'preemptible': only an admin may submit a job that cannot be preempted at priority {} (above {}, "
        "preemption_exempt_max_priority); {} is not an admin",
        priority, config_.preemption_exempt_max_priority, owner));
  }
  return Status::Ok();
}

bool Preemption::Preemptible(const TrackedJob& job) const {
  const JobSpec& spec = job.info.spec();
  if (spec.not_preemptible()) return false;
  // Kueue and Slurm have no such cap; here a job preempted this often
  // keeps its room from then on, so that it cannot be starved for ever.
  return !spec.has_max_preemptions() || job.info.preemptions() < spec.max_preemptions();
}

std::vector<RunningGang> Preemption::Running(int64_t below_priority) const {
  std::vector<RunningGang> gangs;
  const std::vector<TrackedJob*> timed = table_->TimedNow();
  gangs.reserve(timed.size());
  for (TrackedJob* job : timed) {
    if (!job->active) continue;
    // An attempt already ending (a stop, a failure, a preemption) frees
    // its room whatever anyone does. Only a job whose record holds a notice
    // can be in deadlines_ (Notice and Restored set both, Requeue and Tick
    // clear both): the others' ids are not looked up.
    const bool ending = job->run.ending != AttemptEnding::kNone ||
                        (job->info.has_preempting() && deadlines_.count(job->info.job_id()) > 0);
    const int64_t priority = PriorityOf(job->info.spec());
    // The rest can free room only as victims: those of a lower priority,
    // or borrowing, that may be preempted. Only they are copied, so that a
    // decision with thousands of running jobs of its own priority is cheap.
    const bool preemptible = Preemptible(*job);
    if (!ending && !preemptible) continue;
    const bool borrowing = policy_.borrowing && policy_.borrowing(*job);
    if (!ending && priority >= below_priority && !borrowing) continue;
    RunningGang& gang = gangs.emplace_back();
    gang.job_id = job->info.job_id();
    gang.priority = priority;
    gang.borrowing = borrowing;
    gang.preemptible = preemptible;
    gang.being_preempted = ending;
    if (job->info.stored_checkpoints_size() > 0) {
      gang.newest_checkpoint_unix_ms = job->info.stored_checkpoints().rbegin()->unix_ms();
    }
    gang.started_unix_ms = job->info.attempts_size() > 0 ? CurrentAttempt(job->info).start_unix_ms() : 0;
    gang.per_worker = &job->info.spec().resources_per_worker();
    gang.ranks.reserve(job->run.slots.size());
    for (size_t rank = 0; rank < job->run.slots.size(); ++rank) {
      const RankSlot& slot = job->run.slots[rank];
      if (!slot.allocated) continue;  // exited, or not adopted: holds nothing
      gang.ranks.push_back({&slot.node_id, &slot.gpus});
    }
  }
  return gangs;
}

std::vector<std::string> Preemption::MakeRoom(TrackedJob& blocked) {
  const int64_t priority = PriorityOf(blocked.info.spec());
  const std::vector<RunningGang> running = Running(priority);
  if (running.empty()) return {};  // nothing to preempt, nothing under way
  const VictimChoice choice = ChooseVictims(GangOf(blocked.info.spec()), priority, nodes_->SchedulableNow(), running);
  std::vector<std::string> victims;
  for (const std::string& id : choice.under_way) {
    if (deadlines_.count(id)) victims.push_back(id);
  }
  if (!choice.enough || choice.chosen.empty()) return victims;
  // A notice the journal does not hold would be forgotten by a restarted
  // head, which would then run the victim beside the job it made room for.
  if (Status writable = table_->journal().Writable(); !writable.ok()) {
    LOG_WARN("job {}: preempts nothing while the journal cannot be written: {}", blocked.info.job_id(),
             writable.message());
    return victims;
  }
  for (const std::string& id : choice.chosen) {
    TrackedJob* victim = table_->Find(id);
    if (!victim) continue;
    Notice(*victim, blocked);
    victims.push_back(id);
  }
  return victims;
}

void Preemption::Notice(TrackedJob& victim, const TrackedJob& blocked) {
  const int64_t now_ms = clock_->UnixMillis();
  const int notice_ms = std::max(0, config_.preemption_notice_ms);
  PreemptionNotice* notice = victim.info.mutable_preempting();
  notice->set_by_job(blocked.info.job_id());
  notice->set_attempt(CurrentAttempt(victim.info).attempt());
  notice->set_notice_unix_ms(now_ms);
  notice->set_deadline_unix_ms(now_ms + notice_ms);
  notice->set_grace_ms(GraceMs(victim.info.spec()));
  AttemptInfo& attempt = CurrentAttempt(victim.info);
  attempt.set_preempted_by(blocked.info.job_id());
  attempt.set_preempt_notice_unix_ms(now_ms);
  attempt.set_preempt_deadline_unix_ms(now_ms + notice_ms);
  victim.info.set_reason(fmt::format("being preempted by {}: its ranks get SIGTERM in {} ms, SIGKILL {} s later",
                                     blocked.info.job_id(), notice_ms, notice->grace_ms() / 1000.0));
  table_->Persist(victim);  // first: the journal holds the notice before any node hears of it
  const Micros deadline = clock_->NowMicros() + static_cast<Micros>(notice_ms) * 1000;
  deadlines_[victim.info.job_id()] = deadline;
  if (tick_wanted_) tick_wanted_(deadline);
  LOG_INFO("job {}: preempted by {} (priority {} over {}{}); SIGTERM in {} ms", victim.info.job_id(),
           blocked.info.job_id(), PriorityOf(blocked.info.spec()), PriorityOf(victim.info.spec()),
           policy_.borrowing && policy_.borrowing(victim) ? ", borrowing beyond its quota" : "", notice_ms);
  SendNotice(victim);
}

void Preemption::SendNotice(const TrackedJob& victim, const std::string& only_node) {
  std::set<std::string> nodes;
  for (size_t rank = 0; rank < victim.run.slots.size(); ++rank) {
    const RankSlot& slot = victim.run.slots[rank];
    if (slot.node_id.empty() || victim.run.exited.count(static_cast<int>(rank))) continue;
    if (only_node.empty() || slot.node_id == only_node) nodes.insert(slot.node_id);
  }
  HeadMessage message;
  PreemptRanks* preempt = message.mutable_preempt();
  preempt->set_job_id(victim.info.job_id());
  preempt->set_attempt(victim.info.preempting().attempt());
  preempt->set_deadline_unix_ms(victim.info.preempting().deadline_unix_ms());
  preempt->set_by_job(victim.info.preempting().by_job());
  // A node without a stream hears nothing; its ranks end at the deadline all the same.
  for (const std::string& node_id : nodes) send_(node_id, message);
}

void Preemption::EndAttempt(TrackedJob& job, const std::string& why) {
  job.run.kill_grace_ms = std::max(1, job.info.preempting().grace_ms());
  attempts_->End(job, AttemptEnding::kPreempt, why);
}

void Preemption::BeforeRankExited(const std::string& node_id, const RankExited& message) {
  auto found = deadlines_.find(message.job_id());
  if (found == deadlines_.end()) return;
  TrackedJob* job = table_->Find(message.job_id());
  if (!job || !job->active || job->run.ending != AttemptEnding::kNone || job->run.adopting ||
      !IsCurrent(*job, message.job_id(), message.attempt()) || !RunsRank(*job, node_id, message.rank())) {
    return;
  }
  const std::string why = fmt::format("preempted by {}: rank {} exited on notice ({})", job->info.preempting().by_job(),
                                      message.rank(), DescribeExit(message.exit_code(), message.signal()));
  const size_t still_running = job->run.slots.size() - job->run.exited.size();
  if (still_running <= 1) {
    EndAttempt(*job, why);
    return;
  }
  // The others run on until they leave too or the deadline comes: one of
  // them may still be storing what the notice asked for (rank 0 stores the
  // checkpoint; another rank often sees the notice first and leaves). The
  // attempt's end is decided now, so that no exit reads as a failure, nor
  // all of them at 0 as the job's success.
  job->run.kill_grace_ms = std::max(1, job->info.preempting().grace_ms());
  attempts_->EndWhenDown(*job, AttemptEnding::kPreempt, why);
}

void Preemption::BeforeNodeDead(const NodeInfo& node) {
  // Ending an attempt may requeue its job, which leaves deadlines_: a copy is walked.
  std::vector<std::string> noticed;
  for (const auto& [id, deadline] : deadlines_) noticed.push_back(id);
  for (const std::string& id : noticed) {
    TrackedJob* job = table_->Find(id);
    if (!job || !job->active || job->run.ending != AttemptEnding::kNone || job->run.adopting) continue;
    bool lost = false;
    for (size_t rank = 0; rank < job->run.slots.size(); ++rank) {
      if (job->run.slots[rank].node_id != node.node_id() || job->run.exited.count(static_cast<int>(rank))) continue;
      // Gone with the node, whose table entry was reset: nothing to give back.
      job->run.slots[rank].allocated = false;
      job->run.exited.insert(static_cast<int>(rank));
      lost = true;
    }
    if (lost) {
      EndAttempt(*job, fmt::format("preempted by {}: node {} died under notice", job->info.preempting().by_job(),
                                   node.name()));
    }
  }
}

void Preemption::Tick(Micros now, NextWake* wake) {
  // Ending an attempt may requeue its job at once (its nodes unreachable),
  // which leaves deadlines_: a copy is walked.
  const std::map<std::string, Micros> noticed = deadlines_;
  for (const auto& [id, deadline] : noticed) {
    TrackedJob* job = table_->Find(id);
    if (!job || !job->active) {
      // Stopped, or ended otherwise, under notice: nothing is left to preempt.
      if (job && job->info.has_preempting()) {
        job->info.clear_preempting();
        table_->Persist(*job);
      }
      deadlines_.erase(id);
      continue;
    }
    if (job->run.ending == AttemptEnding::kPreempt && job->run.ranks_left_running) {
      // Some of its ranks left on notice; those still running get SIGTERM
      // at the deadline, as they would have had none left.
      if (now >= deadline) {
        attempts_->KillRemaining(*job);
      } else {
        wake->Want(deadline);
      }
      continue;
    }
    if (job->run.ending != AttemptEnding::kNone) continue;
    if (job->run.adopting) {
      // Its ranks are not all back since the head restarted: ended once
      // they are (or retried, uncounted, when they are not back in time).
      wake->Want(std::max(deadline, now + 200'000));
    } else if (now >= deadline) {
      EndAttempt(*job, fmt::format("preempted by {}: its notice ran out", job->info.preempting().by_job()));
    } else {
      wake->Want(deadline);
    }
  }
}

void Preemption::Requeue(TrackedJob& job) {
  deadlines_.erase(job.info.job_id());
  job.info.clear_preempting();
  job.info.set_preemptions(job.info.preemptions() + 1);
  ++total_;
  // Back into the queue with its id, its priority and its age: the queue
  // policy orders it among the others. Not a failure: max_failures is untouched.
  resume_wait_.Requeue(job);
}

void Preemption::Restored() {
  const Micros now = clock_->NowMicros();
  const int64_t now_ms = clock_->UnixMillis();
  table_->ForEachToChange([&](TrackedJob& job) {
    total_ += job.info.preemptions();
    if (!job.active || !job.info.has_preempting()) return;
    const int64_t left_ms = std::max<int64_t>(0, job.info.preempting().deadline_unix_ms() - now_ms);
    deadlines_[job.info.job_id()] = now + left_ms * 1000;
    // Its ranks may not come back, or have failed while the head was away:
    // the attempt was ending for another job's sake, not by its fault.
    job.run.uncounted = true;
  });
}

void Preemption::OnNodeRegistered(const NodeInfo& node) {
  for (const auto& [id, deadline] : deadlines_) {
    const TrackedJob* job = table_->Find(id);
    if (job && job->active && job->run.ending == AttemptEnding::kNone) SendNotice(*job, node.node_id());
  }
}

}  // namespace clusterd
