// SweepManager: admission, following trials through JobManager and the
// scheduler's decisions. Its journal and the replay after a restart are in
// sweep_journal.cc.
#include "daemon/head/sweep_manager.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include <fmt/format.h>

#include "common/file_util.h"
#include "common/jobspec/job_spec.h"
#include "common/job_state.h"
#include "common/logging.h"
#include "common/jobspec/search_space.h"
#include "daemon/head/sweep_admission.h"

namespace clusterd {

namespace {

bool TrialOver(TrialState s) { return s != TRIAL_WAITING && s != TRIAL_ACTIVE; }

// The value of `attr` in a report: training_iteration is counted by us.
bool ValueOf(const MetricRecord& record, const std::string& attr, int64_t iteration, double* out) {
  if (attr == "training_iteration") {
    *out = static_cast<double>(iteration);
    return true;
  }
  auto it = record.values().find(attr);
  if (it == record.values().end()) return false;
  *out = it->second;
  return true;
}

}  // namespace

SweepManager::SweepManager(const Clock* clock, JobManager* jobs, const NodeTable* nodes, JobStore* store,
                           Micros finish_grace)
    : clock_(clock), jobs_(jobs), nodes_(nodes), store_(store), finish_grace_(finish_grace) {
  if (!store_) {
    memory_store_ = std::make_unique<MemoryJobStore>();
    store_ = memory_store_.get();
  }
}

SweepManager::Sweep* SweepManager::Find(const std::string& id) {
  auto it = sweeps_.find(id);
  return it == sweeps_.end() ? nullptr : &it->second;
}

std::string SweepManager::NewId() {
  std::string id = fmt::format("sweep-{:04d}", next_number_++);
  return cluster_id_.empty() ? id : id + "-" + cluster_id_;
}

Result<std::string> SweepManager::Submit(const SubmitJobRequest& request) {
  RETURN_IF_ERROR(ValidateJobSpec(request.spec()));
  RETURN_IF_ERROR(jobs_->CheckHeadLimits(request.spec()));
  Sweep sweep;
  SweepInfo& info = sweep.info;
  info.set_sweep_id(NewId());
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
  if (request.spec().tune().has_asha()) {
    sweep.asha = std::make_unique<Asha>(request.spec().tune().asha(), request.spec().tune().mode_min());
  }
  // Durable before it is acknowledged, as a job's submit is.
  JournalEntry entry;
  entry.set_unix_ms(clock_->UnixMillis());
  *entry.mutable_sweep() = info;
  Status appended = AppendDurably(entry);
  if (!appended.ok()) return Status::Unavailable("the sweep was not submitted: its journal cannot be written: " + appended.message());
  const std::string id = info.sweep_id();
  LOG_INFO("sweep {} ({}): {} trials, metric {} ({}), {}", id, request.spec().name(), count,
           request.spec().tune().metric(), request.spec().tune().mode_min() ? "min" : "max",
           sweep.asha ? "ASHA" : "no scheduler");
  order_.push_back(id);
  Sweep& stored = sweeps_.emplace(id, std::move(sweep)).first->second;
  Admit(stored);
  return id;
}

void SweepManager::Admit(Sweep& sweep) {
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
      job_id = jobs_->Submit(request);
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
  if (!changed.empty()) PersistTrials(sweep, changed);
}

void SweepManager::Poll() {
  for (const std::string& id : order_) {
    Sweep& sweep = sweeps_.at(id);
    if (sweep.info.state() != SWEEP_RUNNING) continue;
    for (auto& trial : *sweep.info.mutable_trials()) {
      if (trial.state() == TRIAL_ACTIVE) Follow(sweep, trial);
    }
    StopUnfinished(sweep);
    Admit(sweep);
    MaybeFinish(sweep);
  }
}

void SweepManager::StopUnfinished(Sweep& sweep) {
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

void SweepManager::Follow(Sweep& sweep, TrialInfo& trial) {
  const JobInfo* job = jobs_->InfoOf(trial.job_id());
  if (!job) {  // deleted under us
    trial.set_state(TRIAL_FAILED);
    trial.set_reason("its job " + trial.job_id() + " is gone");
    if (sweep.asha) sweep.asha->Remove(trial.index());
    PersistTrials(sweep, {trial.index()});
    return;
  }
  trial.set_job_state(job->state());
  if (const auto* records = jobs_->MetricsOf(trial.job_id())) {
    // Counted in records appended, not positions: thinning (job_metrics.h)
    // drops older records, all looked at already, and moves the rest up.
    const size_t appended = static_cast<size_t>(jobs_->MetricsAppended(trial.job_id()));
    size_t& seen = sweep.seen[trial.index()];
    for (size_t at = records->size() - std::min(records->size(), appended - std::min(seen, appended));
         at < records->size() && !sweep.decided[trial.index()]; ++seen) {
      OnReport(sweep, trial, (*records)[at++], true);
    }
    seen = std::max(seen, appended);  // after a decision the rest changes nothing
  }
  if (IsTerminal(job->state())) EndTrial(sweep, trial, *job);
}

bool SweepManager::OnReport(Sweep& sweep, TrialInfo& trial, const MetricRecord& record, bool act) {
  if (record.rank() != 0) return false;
  const TuneSpec& tune = sweep.info.spec().tune();
  // training_iteration counts the trial's reports; a retry goes on from
  // the checkpoint it resumed from, as Ray Tune's restored trials do, so a
  // trial's epochs stay within max_t and its rungs are not entered twice.
  int& attempt = sweep.attempt[trial.index()];
  if (record.attempt() != attempt) {
    attempt = record.attempt();
    trial.set_iterations(IterationsRestored(sweep, trial, attempt));
  }
  trial.set_iterations(trial.iterations() + 1);
  if (!record.checkpoint().empty()) {
    sweep.checkpoint_iteration[trial.index()][BaseName(record.checkpoint())] = trial.iterations();
  }
  *trial.mutable_last_metrics() = record.values();
  auto metric = record.values().find(tune.metric());
  if (metric == record.values().end()) return false;
  trial.set_has_metric(true);
  trial.set_metric(metric->second);
  UpdateBest(sweep);

  std::string stop_reason;
  TrialState ends_as = TRIAL_DONE;
  double time = 0;
  if (sweep.asha && ValueOf(record, tune.asha().time_attr(), trial.iterations(), &time)) {
    Asha::Decision d = sweep.asha->OnResult(trial.index(), time, metric->second);
    if (d.action == Asha::Action::kStop) {
      stop_reason = sweep.asha->StopReason(d);
      ends_as = TRIAL_EARLY_STOPPED;
    } else if (d.action == Asha::Action::kDone) {
      stop_reason = fmt::format("reached max_t ({} {})", tune.asha().max_t(), tune.asha().time_attr());
    }
  }
  for (const auto& [name, bound] : tune.stop()) {
    double value = 0;
    if (stop_reason.empty() && ValueOf(record, name, trial.iterations(), &value) && value >= bound) {
      stop_reason = fmt::format("reached the stop criterion {} >= {}", name, bound);
    }
  }
  if (stop_reason.empty()) return false;
  sweep.decided[trial.index()] = true;
  trial.set_state(ends_as);
  trial.set_reason(stop_reason);
  if (act) {
    LOG_INFO("sweep {}: trial {} ({}): {}", sweep.info.sweep_id(), trial.index(), trial.job_id(), stop_reason);
    if (ends_as == TRIAL_DONE) {
      // It ran as far as it may, which is often its last epoch: the program
      // is about to write its outputs and exit 0, so it gets a moment to
      // (its job then SUCCEEDS, outputs kept) before it is stopped.
      sweep.finish_by[trial.index()] = clock_->NowMicros() + finish_grace_;
    } else {
      auto stopped = jobs_->Stop(trial.job_id(), stop_reason);
      if (!stopped.ok()) LOG_WARN("sweep {}: could not stop trial {}: {}", sweep.info.sweep_id(), trial.index(), stopped.status().message());
    }
  }
  // The decision is the trial's end whatever the job does now: it is no
  // longer active, and its place goes to the next trial.
  PersistTrials(sweep, {trial.index()});
  return true;
}

int64_t SweepManager::IterationsRestored(const Sweep& sweep, const TrialInfo& trial, int attempt) const {
  const JobInfo* job = jobs_->InfoOf(trial.job_id());
  if (!job) return 0;
  for (const AttemptInfo& a : job->attempts()) {
    if (a.attempt() != attempt || a.restored_checkpoint().empty()) continue;
    auto known = sweep.checkpoint_iteration.find(trial.index());
    if (known == sweep.checkpoint_iteration.end()) return 0;
    auto it = known->second.find(a.restored_checkpoint());
    return it == known->second.end() ? 0 : it->second;
  }
  return 0;
}

void SweepManager::EndTrial(Sweep& sweep, TrialInfo& trial, const JobInfo& job) {
  if (trial.state() == TRIAL_ACTIVE) {
    if (job.state() == SUCCEEDED) {
      trial.set_state(TRIAL_DONE);
    } else if (job.state() == STOPPED) {
      trial.set_state(TRIAL_CANCELLED);
    } else {
      trial.set_state(TRIAL_FAILED);
      if (sweep.asha) sweep.asha->Remove(trial.index());
    }
    trial.set_reason(job.reason());
    UpdateBest(sweep);
    PersistTrials(sweep, {trial.index()});
  }
}

void SweepManager::UpdateBest(Sweep& sweep) {
  const bool min = sweep.info.spec().tune().mode_min();
  int best = -1;
  for (const auto& t : sweep.info.trials()) {
    // NaN compares false both ways, and an infinity is a diverged run, not
    // a result: neither is ever best (Ray Tune's filter_nan_and_inf).
    if (!t.has_metric() || t.state() == TRIAL_FAILED || !std::isfinite(t.metric())) continue;
    const double best_value = best < 0 ? 0 : sweep.info.trials(best).metric();
    if (best < 0 || (min ? t.metric() < best_value : t.metric() > best_value)) best = t.index();
  }
  sweep.info.set_best_trial(best);
}

void SweepManager::MaybeFinish(Sweep& sweep) {
  // Over once every trial is over and no job of it still runs (a stopped
  // trial's job may take a grace period to end).
  for (const auto& t : sweep.info.trials()) {
    if (!TrialOver(t.state())) return;
  }
  for (const auto& t : sweep.info.trials()) {
    const JobInfo* job = t.job_id().empty() ? nullptr : jobs_->InfoOf(t.job_id());
    if (job && !IsTerminal(job->state())) return;
  }
  int done = 0, early = 0;
  bool any_metric = false;
  std::set<std::string> reported;  // what rank 0 reported instead, for the reason
  for (const auto& t : sweep.info.trials()) {
    done += t.state() == TRIAL_DONE;
    early += t.state() == TRIAL_EARLY_STOPPED;
    any_metric = any_metric || (t.has_metric() && std::isfinite(t.metric()));
    for (const auto& [name, value] : t.last_metrics()) reported.insert(name);
  }
  std::string reason = fmt::format("{} of {} trials ran to the end", done, sweep.info.trials_size());
  if (sweep.asha) reason += fmt::format(", {} early-stopped by ASHA", early);
  // A metric no trial reported (a typo, say), or only as NaN or infinity,
  // leaves nothing to compare: not a success a DVC stage should go on from.
  if (done > 0 && !any_metric) {
    done = 0;
    const std::string& metric = sweep.info.spec().tune().metric();
    reason = reported.count(metric)
                 ? fmt::format("no trial reported a finite value of its metric '{}' (only NaN or infinity); {}",
                               metric, reason)
             : reported.empty()
                 ? fmt::format("no trial reported its metric '{}' (none reported anything); {}", metric, reason)
                 : fmt::format("no trial reported its metric '{}' (they reported {}); {}", metric,
                               fmt::join(reported, ", "), reason);
  }
  sweep.info.set_state(done > 0 ? SWEEP_SUCCEEDED : SWEEP_FAILED);
  sweep.info.set_reason(reason);
  sweep.info.set_end_unix_ms(clock_->UnixMillis());
  LOG_INFO("sweep {}: over: {}; best trial {}", sweep.info.sweep_id(), sweep.info.reason(), sweep.info.best_trial());
  Persist(sweep);
}

SweepInfo SweepManager::Shown(const SweepInfo& info) const {
  SweepInfo shown = info;
  // A trial's job goes on after the sweep decided about it (stopped early,
  // done, cancelled): its state is the job's as it is now. Found by
  // exploratory testing: they showed RUNNING for jobs long STOPPED.
  for (TrialInfo& trial : *shown.mutable_trials()) {
    const JobInfo* job = trial.job_id().empty() ? nullptr : jobs_->InfoOf(trial.job_id());
    if (job) trial.set_job_state(job->state());
  }
  return shown;
}

Result<SweepInfo> SweepManager::Get(const std::string& sweep_id) const {
  auto it = sweeps_.find(sweep_id);
  if (it == sweeps_.end()) return Status::NotFound(fmt::format("no sweep '{}'", sweep_id));
  return Shown(it->second.info);
}

std::vector<SweepInfo> SweepManager::List() const {
  std::vector<SweepInfo> out;
  for (const auto& id : order_) out.push_back(Shown(sweeps_.at(id).info));
  return out;
}

Result<ListSweepsReply> SweepManager::ListPage(const ListSweepsRequest& request) const {
  auto from = order_.begin();
  if (!request.page_token().empty()) {
    from = std::find(order_.begin(), order_.end(), request.page_token());
    if (from == order_.end()) {
      return Status::InvalidArgument(fmt::format("'{}' is not a page token of ListSweeps", request.page_token()));
    }
    ++from;
  }
  const int size = request.page_size() <= 0 ? kSweepsPage : std::min(request.page_size(), kMaxSweepsPage);
  ListSweepsReply reply;
  size_t bytes = 0;
  for (auto it = from; it != order_.end(); ++it) {
    const SweepInfo info = Shown(sweeps_.at(*it).info);
    const size_t more = info.ByteSizeLong();
    if (reply.sweeps_size() >= size || (reply.sweeps_size() > 0 && bytes + more > JobManager::kMaxReplyBytes)) {
      reply.set_next_page_token(reply.sweeps().rbegin()->sweep_id());
      break;
    }
    *reply.add_sweeps() = info;
    bytes += more;
  }
  return reply;
}

Result<SweepInfo> SweepManager::Stop(const std::string& sweep_id) {
  Sweep* sweep = Find(sweep_id);
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
  Persist(*sweep);
  return sweep->info;
}

Result<SweepInfo> SweepManager::Delete(const std::string& sweep_id) {
  Sweep* sweep = Find(sweep_id);
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
  Status rewritten = Rewrite(sweep_id);
  if (!rewritten.ok()) {
    return Status::Unavailable(fmt::format("the sweep was not deleted: the sweeps' journal: {}", rewritten.message()));
  }
  SweepInfo info = std::move(sweep->info);
  for (const TrialInfo& trial : info.trials()) {
    if (trial.job_id().empty() || !jobs_->InfoOf(trial.job_id())) continue;
    auto deleted = jobs_->Delete(trial.job_id());
    if (!deleted.ok()) LOG_WARN("sweep {}: trial {}'s job {}: {}", sweep_id, trial.index(), trial.job_id(), deleted.status().message());
  }
  sweeps_.erase(sweep_id);
  order_.erase(std::find(order_.begin(), order_.end(), sweep_id));
  LOG_INFO("sweep {} ({}) deleted with its {} trials' jobs", sweep_id, info.spec().name(), info.trials_size());
  return info;
}

}  // namespace clusterd
