#include "daemon/head/sweep_manager.h"

#include <algorithm>

#include <fmt/format.h>

#include "common/job_state.h"
#include "common/jobspec/job_spec.h"
#include "common/jobspec/search_space.h"
#include "common/logging.h"
#include "daemon/head/identity/access_rules.h"
#include "daemon/head/sweep_admission.h"
#include "daemon/head/sweep_outcome.h"
#include "daemon/head/sweep_restore.h"

namespace clusterd {

SweepManager::SweepManager(const Clock* clock, JobManager* jobs, const NodeTable* nodes, JobStore* store,
                           Micros finish_grace)
    : clock_(clock),
      jobs_(jobs),
      nodes_(nodes),
      finish_grace_(finish_grace),
      table_(jobs),
      journal_(clock, store, [this] { return SweepJournal::Records{next_number_, table_.Records()}; }) {}

std::string SweepManager::NewId() {
  std::string id = fmt::format("sweep-{:04d}", next_number_++);
  return cluster_id_.empty() ? id : id + "-" + cluster_id_;
}

Result<std::string> SweepManager::Submit(const SubmitJobRequest& request, const std::string& owner) {
  RETURN_IF_ERROR(jobs_->CheckSpec(request.spec()));
  SweepInfo info;
  info.set_sweep_id(NewId());
  info.set_owner(owner);
  *info.mutable_spec() = request.spec();
  *info.mutable_passthrough_env() = request.passthrough_env();
  info.set_state(SWEEP_RUNNING);
  info.set_submit_unix_ms(clock_->UnixMillis());
  info.set_best_trial(-1);
  const int64_t count = TrialCount(request.spec().tune());
  for (int64_t i = 0; i < count; ++i) {
    TrialInfo* trial = info.add_trials();
    trial->set_index(static_cast<int32_t>(i));
    trial->set_state(TRIAL_WAITING);
    for (const auto& [name, json] : SampleTrial(request.spec().tune(), i)) (*trial->mutable_params())[name] = json;
  }
  // Durable before it is acknowledged, as a job's submit is.
  Status appended = journal_.RecordSubmit(info);
  if (!appended.ok()) return Status::Unavailable("the sweep was not submitted: its journal cannot be written: " + appended.message());
  SweepRun& sweep = table_.Add(SweepRun(std::move(info)));
  const std::string id = sweep.info.sweep_id();
  LOG_INFO("sweep {} ({}): {} trials, metric {} ({}), {}", id, request.spec().name(), count,
           request.spec().tune().metric(), request.spec().tune().mode_min() ? "min" : "max",
           sweep.decisions.has_asha() ? "ASHA" : "no scheduler");
  Admit(sweep);
  return id;
}

void SweepManager::Admit(SweepRun& sweep) {
  if (sweep.info.state() != SWEEP_RUNNING) return;
  const JobSpec& spec = sweep.info.spec();
  std::vector<NodeInfo> nodes;
  for (const NodeInfo* node : nodes_->Nodes()) nodes.push_back(*node);
  const int limit = AdmissionLimit(spec.tune().max_concurrent(),
                                   GangsThatFit(nodes, spec.resources_per_worker(), spec.num_workers()));
  std::vector<TrialState> states;
  for (const auto& t : sweep.info.trials()) states.push_back(t.state());
  std::vector<int> changed;
  for (int index : TrialsToAdmit(states, limit)) {
    TrialInfo& trial = *sweep.info.mutable_trials(index);
    auto trial_spec = TrialSpec(spec, sweep.info.sweep_id(), index);
    Result<std::string> job_id = trial_spec.status();
    if (trial_spec.ok()) {
      SubmitJobRequest request;
      *request.mutable_spec() = *trial_spec;
      *request.mutable_passthrough_env() = sweep.info.passthrough_env();
      job_id = jobs_->Submit(request, OwnerOf(sweep.info));  // a trial is its sweep's owner's
    }
    if (!job_id.ok()) {
      // The journal cannot be written, or the queue is at its limit
      // (max_submitted_jobs): the trial waits, and the next poll tries again.
      if (job_id.status().code() == Status::Code::kUnavailable ||
          job_id.status().code() == Status::Code::kResourceExhausted) {
        break;
      }
      trial.set_state(TRIAL_FAILED);
      trial.set_reason("not submitted: " + job_id.status().message());
      changed.push_back(index);
      continue;
    }
    trial.set_job_id(*job_id);
    trial.set_state(TRIAL_ACTIVE);
    trial.set_job_state(PENDING);
    changed.push_back(index);
  }
  if (!changed.empty()) journal_.RecordTrials(sweep.info, changed);
}

void SweepManager::Poll() {
  for (const std::string& id : table_.order()) {
    SweepRun& sweep = table_.at(id);
    if (sweep.info.state() != SWEEP_RUNNING) continue;
    for (auto& trial : *sweep.info.mutable_trials()) {
      if (trial.state() == TRIAL_ACTIVE) Follow(sweep, trial);
    }
    StopUnfinished(sweep);
    Admit(sweep);
    MaybeFinish(sweep);
  }
}

void SweepManager::StopUnfinished(SweepRun& sweep) {
  const Micros now = clock_->NowMicros();
  for (auto it = sweep.finish_by.begin(); it != sweep.finish_by.end();) {
    TrialInfo& trial = *sweep.info.mutable_trials(it->first);
    const JobInfo* job = jobs_->InfoOf(trial.job_id());
    if (job) trial.set_job_state(job->state());
    if (job && !IsTerminal(job->state()) && now >= it->second) {
      auto stopped = jobs_->Stop(trial.job_id(), trial.reason());
      if (!stopped.ok()) LOG_WARN("sweep {}: could not stop trial {}: {}", sweep.info.sweep_id(), trial.index(), stopped.status().message());
    } else if (job && !IsTerminal(job->state())) {
      ++it;
      continue;
    }
    it = sweep.finish_by.erase(it);
  }
}

void SweepManager::Follow(SweepRun& sweep, TrialInfo& trial) {
  const JobInfo* job = jobs_->InfoOf(trial.job_id());
  if (!job) {  // deleted under us
    trial.set_state(TRIAL_FAILED);
    trial.set_reason("its job " + trial.job_id() + " is gone");
    sweep.decisions.Forget(trial.index());
    journal_.RecordTrials(sweep.info, {trial.index()});
    return;
  }
  trial.set_job_state(job->state());
  if (const auto* records = jobs_->MetricsOf(trial.job_id())) {
    // Counted in records appended, not positions: thinning (job_metrics.h)
    // drops older records, all looked at already, and moves the rest up.
    const size_t appended = static_cast<size_t>(jobs_->MetricsAppended(trial.job_id()));
    size_t& seen = sweep.seen[trial.index()];
    for (size_t at = records->size() - std::min(records->size(), appended - std::min(seen, appended));
         at < records->size() && !sweep.decisions.decided(trial.index()); ++seen) {
      OnReport(sweep, trial, (*records)[at++], job, true);
    }
    seen = std::max(seen, appended);  // after a decision the rest changes nothing
  }
  if (IsTerminal(job->state())) EndTrial(sweep, trial, *job);
}

bool SweepManager::OnReport(SweepRun& sweep, TrialInfo& trial, const MetricRecord& record, const JobInfo* job,
                            bool act) {
  const SweepDecisions::Decision decision = sweep.decisions.OnReport(trial, record, job);
  if (decision.metric) sweep.info.set_best_trial(BestTrial(sweep.info));
  if (!decision.stop) return false;
  if (act) {
    LOG_INFO("sweep {}: trial {} ({}): {}", sweep.info.sweep_id(), trial.index(), trial.job_id(), decision.reason);
    if (decision.ends_as == TRIAL_DONE) {
      // It ran as far as it may, which is often its last epoch: the program
      // is about to write its outputs and exit 0, so it gets a moment to
      // (its job then SUCCEEDS, outputs kept) before it is stopped.
      sweep.finish_by[trial.index()] = clock_->NowMicros() + finish_grace_;
    } else {
      auto stopped = jobs_->Stop(trial.job_id(), decision.reason);
      if (!stopped.ok()) LOG_WARN("sweep {}: could not stop trial {}: {}", sweep.info.sweep_id(), trial.index(), stopped.status().message());
    }
  }
  // The decision is the trial's end whatever the job does now: it is no
  // longer active, and its place goes to the next trial.
  journal_.RecordTrials(sweep.info, {trial.index()});
  return true;
}

void SweepManager::EndTrial(SweepRun& sweep, TrialInfo& trial, const JobInfo& job) {
  if (trial.state() != TRIAL_ACTIVE) return;
  if (job.state() == SUCCEEDED) {
    trial.set_state(TRIAL_DONE);
  } else if (job.state() == STOPPED) {
    trial.set_state(TRIAL_CANCELLED);
  } else {
    trial.set_state(TRIAL_FAILED);
    sweep.decisions.Forget(trial.index());
  }
  trial.set_reason(job.reason());
  sweep.info.set_best_trial(BestTrial(sweep.info));
  journal_.RecordTrials(sweep.info, {trial.index()});
}

void SweepManager::MaybeFinish(SweepRun& sweep) {
  // Over once every trial is over and no job of it still runs (a stopped
  // trial's job may take a grace period to end).
  for (const auto& t : sweep.info.trials()) {
    if (!TrialOver(t.state())) return;
  }
  for (const auto& t : sweep.info.trials()) {
    const JobInfo* job = t.job_id().empty() ? nullptr : jobs_->InfoOf(t.job_id());
    if (job && !IsTerminal(job->state())) return;
  }
  const SweepOutcome outcome = FinalOutcome(sweep.info, sweep.decisions.has_asha());
  sweep.info.set_state(outcome.state);
  sweep.info.set_reason(outcome.reason);
  sweep.info.set_end_unix_ms(clock_->UnixMillis());
  LOG_INFO("sweep {}: over: {}; best trial {}", sweep.info.sweep_id(), sweep.info.reason(), sweep.info.best_trial());
  journal_.RecordSweep(sweep.info);
}

Result<SweepInfo> SweepManager::Stop(const std::string& sweep_id) {
  SweepRun* sweep = table_.Find(sweep_id);
  if (!sweep) return Status::NotFound(fmt::format("no sweep '{}'", sweep_id));
  if (sweep->info.state() != SWEEP_RUNNING) return sweep->info;
  for (auto& trial : *sweep->info.mutable_trials()) {
    if (trial.state() == TRIAL_WAITING) {
      trial.set_state(TRIAL_CANCELLED);
      trial.set_reason("the sweep was stopped before it ran");
    } else if (trial.state() == TRIAL_ACTIVE) {
      auto job = jobs_->Stop(trial.job_id(), "the sweep was stopped by clusterctl stop");
      if (!job.ok()) return job.status();
      trial.set_state(TRIAL_CANCELLED);
      trial.set_reason("the sweep was stopped by clusterctl stop");
      trial.set_job_state(job->state());
    }
  }
  sweep->info.set_state(SWEEP_STOPPED);
  sweep->info.set_reason("stopped by clusterctl stop");
  sweep->info.set_end_unix_ms(clock_->UnixMillis());
  journal_.RecordSweep(sweep->info);
  return sweep->info;
}

Result<SweepInfo> SweepManager::Delete(const std::string& sweep_id) {
  SweepRun* sweep = table_.Find(sweep_id);
  if (!sweep) return Status::NotFound(fmt::format("no sweep '{}'", sweep_id));
  if (sweep->info.state() == SWEEP_RUNNING) {
    return Status::FailedPrecondition(
        fmt::format("sweep {} is RUNNING: stop it first (`clusterctl stop {}`)", sweep_id, sweep_id));
  }
  for (const TrialInfo& trial : sweep->info.trials()) {
    const JobInfo* job = trial.job_id().empty() ? nullptr : jobs_->InfoOf(trial.job_id());
    if (job && !IsTerminal(job->state())) {
      return Status::FailedPrecondition(fmt::format("sweep {}: trial {}'s job {} is still {}: try again once it has ended",
                                                    sweep_id, trial.index(), trial.job_id(), JobStateName(job->state())));
    }
  }
  // The journal first: a head that dies now has the sweep or not, whole.
  Status rewritten = journal_.Rewrite(sweep_id);
  if (!rewritten.ok()) {
    return Status::Unavailable(fmt::format("the sweep was not deleted: the sweeps' journal: {}", rewritten.message()));
  }
  SweepInfo info = std::move(sweep->info);
  for (const TrialInfo& trial : info.trials()) {
    if (trial.job_id().empty() || !jobs_->InfoOf(trial.job_id())) continue;
    auto deleted = jobs_->Delete(trial.job_id());
    if (!deleted.ok()) LOG_WARN("sweep {}: trial {}'s job {}: {}", sweep_id, trial.index(), trial.job_id(), deleted.status().message());
  }
  table_.Erase(sweep_id);
  LOG_INFO("sweep {} ({}) deleted with its {} trials' jobs", sweep_id, info.spec().name(), info.trials_size());
  return info;
}

Status SweepManager::Restore() {
  ASSIGN_OR_RETURN(SweepJournal::Loaded loaded, journal_.Load());
  next_number_ = std::max(next_number_, loaded.next_sweep_number);
  for (SweepInfo& info : loaded.sweeps) table_.Add(SweepRun(std::move(info)));
  const SweepRestore restore(clock_, jobs_, finish_grace_,
                             [this](SweepRun& sweep, TrialInfo& trial, const MetricRecord& record, const JobInfo* job,
                                    bool act) { return OnReport(sweep, trial, record, job, act); });
  restore.Replay(table_);
  for (const std::string& id : table_.order()) {
    SweepRun& sweep = table_.at(id);
    if (sweep.info.state() == SWEEP_RUNNING) journal_.RecordSweep(sweep.info);
  }
  return Status::Ok();
}

}  // namespace clusterd
