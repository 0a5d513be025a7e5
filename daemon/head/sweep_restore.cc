#include "daemon/head/sweep_restore.h"

#include <algorithm>
#include <vector>

#include "common/job_state.h"
#include "common/logging.h"
#include "daemon/head/sweep_outcome.h"

namespace clusterd {

SweepRestore::SweepRestore(const Clock* clock, const JobManager* jobs, Micros finish_grace, ReportFn on_report)
    : clock_(clock), jobs_(jobs), finish_grace_(finish_grace), on_report_(std::move(on_report)) {}

void SweepRestore::Replay(SweepTable& table) const {
  // Trials' jobs by (sweep, index): a job submitted just before the head
  // died may not be in its sweep's last record yet.
  // In place: a copy of every job the head has run is a second head's worth of memory.
  TrialJobs trial_jobs;
  jobs_->ForEachJob([&](const JobInfo& job) {
    if (!job.spec().sweep_id().empty()) trial_jobs[{job.spec().sweep_id(), job.spec().trial_index()}] = &job;
  });
  for (const std::string& id : table.order()) ReplaySweep(table.at(id), trial_jobs);
}

void SweepRestore::ReplaySweep(SweepRun& sweep, const TrialJobs& trial_jobs) const {
  const std::string& id = sweep.info.sweep_id();
  struct Report {
    int64_t received_seq;  // 0 for records from before it: those go first, by their unix_ms
    int64_t unix_ms;
    int trial;
    size_t index;
  };
  std::vector<Report> replay;
  std::map<int, const JobInfo*> job_of;  // trial -> its job
  for (auto& trial : *sweep.info.mutable_trials()) {
    auto job = trial_jobs.find({id, trial.index()});
    if (trial.job_id().empty() && job != trial_jobs.end()) {
      trial.set_job_id(job->second->job_id());
      trial.set_state(TRIAL_ACTIVE);
    }
    if (trial.job_id().empty()) continue;
    job_of[trial.index()] = jobs_->InfoOf(trial.job_id());
    // The replay below counts the trial's reports again from nothing.
    trial.set_iterations(0);
    trial.clear_last_metrics();
    trial.set_has_metric(false);
    trial.set_metric(0);
    if (const auto* records = jobs_->MetricsOf(trial.job_id())) {
      for (size_t i = 0; i < records->size(); ++i) {
        replay.push_back({(*records)[i].received_seq(), (*records)[i].unix_ms(), trial.index(), i});
      }
    }
  }
  // The rungs as they were: every recorded report again, in the order the
  // head took them (not by the ranks' clocks, which are other machines'),
  // deciding nothing (stops already asked for are in the trials' states).
  std::stable_sort(replay.begin(), replay.end(), [](const Report& a, const Report& b) {
    return a.received_seq != b.received_seq ? a.received_seq < b.received_seq : a.unix_ms < b.unix_ms;
  });
  std::map<int, TrialState> kept_state;
  std::map<int, std::string> kept_reason;
  for (const auto& t : sweep.info.trials()) {
    kept_state[t.index()] = t.state();
    kept_reason[t.index()] = t.reason();
  }
  for (const Report& r : replay) {
    if (sweep.decisions.decided(r.trial)) continue;  // live, nothing after a decision was looked at
    TrialInfo& trial = *sweep.info.mutable_trials(r.trial);
    const bool was_active = kept_state[r.trial] == TRIAL_ACTIVE;
    // A decision the old head made but did not live to carry out is carried out now.
    on_report_(sweep, trial, (*jobs_->MetricsOf(trial.job_id()))[r.index], job_of[r.trial], /*act=*/was_active);
    sweep.seen[r.trial] = r.index + 1;
  }
  for (auto& trial : *sweep.info.mutable_trials()) {
    const TrialState kept = kept_state[trial.index()];
    if (kept != TRIAL_ACTIVE) {
      trial.set_state(kept);
      trial.set_reason(kept_reason[trial.index()]);
      // A trial still waiting for its turn is not decided: once admitted,
      // its reports count (iterations, metric, best trial).
      if (kept != TRIAL_WAITING) sweep.decisions.MarkDecided(trial.index());
      // Done while its job ran on: it gets its moment to end again.
      const JobInfo* job = jobs_->InfoOf(trial.job_id());
      if (kept == TRIAL_DONE && job && !IsTerminal(job->state())) {
        sweep.finish_by[trial.index()] = clock_->NowMicros() + finish_grace_;
      }
    }
    if (kept == TRIAL_FAILED) sweep.decisions.Forget(trial.index());
  }
  sweep.info.set_best_trial(BestTrial(sweep.info));
  LOG_INFO("sweep {}: restored ({}), {} trials", id, SweepState_Name(sweep.info.state()), sweep.info.trials_size());
}

}  // namespace clusterd
