#include "daemon/head/sweep_decisions.h"

#include <fmt/format.h>

#include "common/file_util.h"

namespace clusterd {

namespace {

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

SweepDecisions::SweepDecisions(const TuneSpec& tune) : tune_(tune) {
  if (tune.has_asha()) asha_.emplace(tune.asha(), tune.mode_min());
}

bool SweepDecisions::decided(int trial) const {
  auto it = decided_.find(trial);
  return it != decided_.end() && it->second;
}

void SweepDecisions::Forget(int trial) {
  if (asha_) asha_->Remove(trial);
}

SweepDecisions::Decision SweepDecisions::OnReport(TrialInfo& trial, const MetricRecord& record, const JobInfo* job) {
  Decision decision;
  if (record.rank() != 0) return decision;
  int& attempt = attempt_[trial.index()];
  if (record.attempt() != attempt) {
    attempt = record.attempt();
    trial.set_iterations(IterationsRestored(trial.index(), attempt, job));
  }
  trial.set_iterations(trial.iterations() + 1);
  if (!record.checkpoint().empty()) {
    checkpoint_iteration_[trial.index()][BaseName(record.checkpoint())] = trial.iterations();
  }
  *trial.mutable_last_metrics() = record.values();
  auto metric = record.values().find(tune_.metric());
  if (metric == record.values().end()) return decision;
  trial.set_has_metric(true);
  trial.set_metric(metric->second);
  decision.metric = true;

  double time = 0;
  if (asha_ && ValueOf(record, tune_.asha().time_attr(), trial.iterations(), &time)) {
    Asha::Decision d = asha_->OnResult(trial.index(), time, metric->second);
    if (d.action == Asha::Action::kStop) {
      decision.reason = asha_->StopReason(d);
      decision.ends_as = TRIAL_EARLY_STOPPED;
    } else if (d.action == Asha::Action::kDone) {
      decision.reason = fmt::format("reached max_t ({} {})", tune_.asha().max_t(), tune_.asha().time_attr());
    }
  }
  for (const auto& [name, bound] : tune_.stop()) {
    double value = 0;
    if (decision.reason.empty() && ValueOf(record, name, trial.iterations(), &value) && value >= bound) {
      decision.reason = fmt::format("reached the stop criterion {} >= {}", name, bound);
    }
  }
  if (decision.reason.empty()) return decision;
  decision.stop = true;
  decided_[trial.index()] = true;
  trial.set_state(decision.ends_as);
  trial.set_reason(decision.reason);
  return decision;
}

int64_t SweepDecisions::IterationsRestored(int trial, int attempt, const JobInfo* job) const {
  if (!job) return 0;
  for (const AttemptInfo& a : job->attempts()) {
    if (a.attempt() != attempt || a.restored_checkpoint().empty()) continue;
    auto known = checkpoint_iteration_.find(trial);
    if (known == checkpoint_iteration_.end()) return 0;
    auto it = known->second.find(a.restored_checkpoint());
    return it == known->second.end() ? 0 : it->second;
  }
  return 0;
}

}  // namespace clusterd
