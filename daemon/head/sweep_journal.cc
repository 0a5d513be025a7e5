// SweepManager, its journal: whole sweep records at submit, at the end and
// on a stop, a record of the changed trials otherwise; compaction; and the
// replay of all that, with the trials' reports, after a restart.
#include <algorithm>
#include <cstdio>
#include <map>

#include <fmt/format.h>

#include "common/logging.h"
#include "daemon/head/sweep_manager.h"

namespace clusterd {

Status SweepManager::AppendDurably(const JournalEntry& entry) {
  // JobStore::Append only writes (the job journal syncs in groups); sweep
  // records are few (a trial's start and end), so each is synced at once.
  RETURN_IF_ERROR(store_->Append(entry));
  return store_->SyncTask()();
}

void SweepManager::Persist(const Sweep& sweep) {
  JournalEntry entry;
  *entry.mutable_sweep() = sweep.info;
  Record(sweep, std::move(entry));
}

void SweepManager::PersistTrials(const Sweep& sweep, const std::vector<int>& indexes) {
  JournalEntry entry;
  SweepTrials* trials = entry.mutable_sweep_trials();
  trials->set_sweep_id(sweep.info.sweep_id());
  trials->set_best_trial(sweep.info.best_trial());
  for (int index : indexes) *trials->add_trials() = sweep.info.trials(index);
  Record(sweep, std::move(entry));
}

void SweepManager::Record(const Sweep& sweep, JournalEntry entry) {
  entry.set_unix_ms(clock_->UnixMillis());
  Status status = AppendDurably(entry);
  if (!status.ok()) LOG_WARN("sweep {}: journal write failed: {}", sweep.info.sweep_id(), status.message());
  // Once the file holds four times the live records (and 1 MiB), rewrite
  // it with the whole latest record of each sweep.
  uint64_t live = 0;
  for (const auto& [id, s] : sweeps_) live += s.info.ByteSizeLong() + kJournalHeaderBytes;
  if (store_->bytes() > std::max<uint64_t>(1 << 20, 4 * live)) {
    Status compacted = Rewrite("");
    if (!compacted.ok()) LOG_WARN("sweeps' journal: compaction failed: {}", compacted.message());
  }
}

Status SweepManager::Rewrite(const std::string& without) {
  std::vector<JournalEntry> entries;
  // Ids are never handed out twice, though the newest sweeps be deleted
  // (found by exploratory testing: a restarted head reused their ids).
  JournalEntry first;
  first.set_unix_ms(clock_->UnixMillis());
  first.mutable_snapshot()->set_next_sweep_number(next_number_);
  entries.push_back(std::move(first));
  for (const auto& id : order_) {
    if (id == without) continue;
    JournalEntry e;
    e.set_unix_ms(clock_->UnixMillis());
    *e.mutable_sweep() = sweeps_.at(id).info;
    entries.push_back(std::move(e));
  }
  return store_->Compact(entries);
}

Status SweepManager::Restore() {
  ASSIGN_OR_RETURN(std::vector<JournalEntry> entries, store_->LoadAll());
  std::map<std::string, SweepInfo> latest;
  for (const auto& e : entries) {
    if (e.has_sweep_trials()) {
      auto it = latest.find(e.sweep_trials().sweep_id());
      if (it == latest.end()) continue;  // a change to a sweep the journal does not hold: nothing to apply it to
      for (const TrialInfo& trial : e.sweep_trials().trials()) {
        if (trial.index() >= 0 && trial.index() < it->second.trials_size()) {
          *it->second.mutable_trials(trial.index()) = trial;
        }
      }
      it->second.set_best_trial(e.sweep_trials().best_trial());
      continue;
    }
    if (e.has_snapshot()) next_number_ = std::max(next_number_, e.snapshot().next_sweep_number());
    if (!e.has_sweep()) continue;
    const std::string& id = e.sweep().sweep_id();
    if (latest.count(id) == 0) order_.push_back(id);
    latest[id] = e.sweep();
    int number = 0;
    if (std::sscanf(id.c_str(), "sweep-%d", &number) == 1) next_number_ = std::max(next_number_, number + 1);
  }
  // Trials' jobs by (sweep, index): a job submitted just before the head
  // died may not be in its sweep's last record yet.
  // In place: a copy of every job the head has run is a second head's worth of memory.
  std::map<std::pair<std::string, int>, const JobInfo*> trial_jobs;
  jobs_->ForEachJob([&](const JobInfo& job) {
    if (!job.spec().sweep_id().empty()) trial_jobs[{job.spec().sweep_id(), job.spec().trial_index()}] = &job;
  });
  for (auto& [id, info] : latest) {
    Sweep& sweep = sweeps_[id];
    sweep.info = info;
    const TuneSpec& tune = info.spec().tune();
    if (tune.has_asha()) sweep.asha = std::make_unique<Asha>(tune.asha(), tune.mode_min());
    struct Replay {
      int64_t received_seq;  // 0 for records from before it: those go first, by their unix_ms
      int64_t unix_ms;
      int trial;
      size_t index;
    };
    std::vector<Replay> replay;
    for (auto& trial : *sweep.info.mutable_trials()) {
      auto job = trial_jobs.find({id, trial.index()});
      if (trial.job_id().empty() && job != trial_jobs.end()) {
        trial.set_job_id(job->second->job_id());
        trial.set_state(TRIAL_ACTIVE);
      }
      if (trial.job_id().empty()) continue;
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
    std::stable_sort(replay.begin(), replay.end(), [](const Replay& a, const Replay& b) {
      return a.received_seq != b.received_seq ? a.received_seq < b.received_seq : a.unix_ms < b.unix_ms;
    });
    std::map<int, TrialState> kept_state;
    std::map<int, std::string> kept_reason;
    for (const auto& t : sweep.info.trials()) {
      kept_state[t.index()] = t.state();
      kept_reason[t.index()] = t.reason();
    }
    for (const Replay& r : replay) {
      if (sweep.decided[r.trial]) continue;  // live, nothing after a decision was looked at
      TrialInfo& trial = *sweep.info.mutable_trials(r.trial);
      const bool was_active = kept_state[r.trial] == TRIAL_ACTIVE;
      // A decision the old head made but did not live to carry out is carried out now.
      OnReport(sweep, trial, (*jobs_->MetricsOf(trial.job_id()))[r.index], /*act=*/was_active);
      sweep.seen[r.trial] = r.index + 1;
    }
    for (auto& trial : *sweep.info.mutable_trials()) {
      const TrialState kept = kept_state[trial.index()];
      if (kept != TRIAL_ACTIVE) {
        trial.set_state(kept);
        trial.set_reason(kept_reason[trial.index()]);
        // Found by exploratory testing: a trial still waiting for its turn
        // was taken as decided too, and once admitted none of its reports
        // counted (no iterations, no metric, no best trial).
        if (kept != TRIAL_WAITING) sweep.decided[trial.index()] = true;
        // Done while its job ran on: it gets its moment to end again.
        const JobInfo* job = jobs_->InfoOf(trial.job_id());
        if (kept == TRIAL_DONE && job && !IsTerminal(job->state())) {
          sweep.finish_by[trial.index()] = clock_->NowMicros() + finish_grace_;
        }
      }
      if (kept == TRIAL_FAILED && sweep.asha) sweep.asha->Remove(trial.index());
    }
    UpdateBest(sweep);
    LOG_INFO("sweep {}: restored ({}), {} trials", id, SweepState_Name(sweep.info.state()), sweep.info.trials_size());
  }
  for (const std::string& id : order_) {
    Sweep& sweep = sweeps_.at(id);
    if (sweep.info.state() == SWEEP_RUNNING) Persist(sweep);
  }
  return Status::Ok();
}

}  // namespace clusterd
