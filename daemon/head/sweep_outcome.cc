#include "daemon/head/sweep_outcome.h"

#include <cmath>
#include <set>

#include <fmt/format.h>

namespace clusterd {

bool TrialOver(TrialState state) { return state != TRIAL_WAITING && state != TRIAL_ACTIVE; }

int BestTrial(const SweepInfo& info) {
  const bool min = info.spec().tune().mode_min();
  int best = -1;
  for (const auto& t : info.trials()) {
    if (!t.has_metric() || t.state() == TRIAL_FAILED || !std::isfinite(t.metric())) continue;
    const double best_value = best < 0 ? 0 : info.trials(best).metric();
    if (best < 0 || (min ? t.metric() < best_value : t.metric() > best_value)) best = t.index();
  }
  return best;
}

SweepOutcome FinalOutcome(const SweepInfo& info, bool with_asha) {
  int done = 0, early = 0;
  bool any_metric = false;
  std::set<std::string> reported;  // what rank 0 reported instead, for the reason
  for (const auto& t : info.trials()) {
    done += t.state() == TRIAL_DONE;
    early += t.state() == TRIAL_EARLY_STOPPED;
    any_metric = any_metric || (t.has_metric() && std::isfinite(t.metric()));
    for (const auto& [name, value] : t.last_metrics()) reported.insert(name);
  }
  std::string reason = fmt::format("{} of {} trials ran to the end", done, info.trials_size());
  if (with_asha) reason += fmt::format(", {} early-stopped by ASHA", early);
  if (done > 0 && !any_metric) {
    done = 0;
    const std::string& metric = info.spec().tune().metric();
    reason = reported.count(metric)
                 ? fmt::format("no trial reported a finite value of its metric '{}' (only NaN or infinity); {}",
                               metric, reason)
             : reported.empty()
                 ? fmt::format("no trial reported its metric '{}' (none reported anything); {}", metric, reason)
                 : fmt::format("no trial reported its metric '{}' (they reported {}); {}", metric,
                               fmt::join(reported, ", "), reason);
  }
  return {done > 0 ? SWEEP_SUCCEEDED : SWEEP_FAILED, reason};
}

}  // namespace clusterd
