// A sweep's results alone, on hand-made records: the best trial by mode,
// never NaN, infinite or failed, and the end's state and reason.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "daemon/head/sweep_outcome.h"

using namespace clusterd;

namespace {

struct TrialResult {
  TrialState state;
  double metric;  // NaN below: none reported when `reported` is false
  bool reported = true;
};

SweepInfo Sweep(const std::vector<TrialResult>& results, bool mode_min = false) {
  SweepInfo info;
  info.mutable_spec()->mutable_tune()->set_metric("loss");
  info.mutable_spec()->mutable_tune()->set_mode_min(mode_min);
  for (const TrialResult& result : results) {
    TrialInfo* trial = info.add_trials();
    trial->set_index(info.trials_size() - 1);
    trial->set_state(result.state);
    if (!result.reported) continue;
    trial->set_has_metric(true);
    trial->set_metric(result.metric);
    (*trial->mutable_last_metrics())["loss"] = result.metric;
  }
  return info;
}

}  // namespace

TEST_CASE("the best trial is the best finite metric of a trial that did not fail", "[sweep][sweep_outcome]") {
  const double nan = std::nan(""), inf = std::numeric_limits<double>::infinity();
  CHECK(BestTrial(Sweep({{TRIAL_DONE, 0.5}, {TRIAL_DONE, 0.7}, {TRIAL_FAILED, 0.9}})) == 1);
  CHECK(BestTrial(Sweep({{TRIAL_DONE, 0.5}, {TRIAL_DONE, 0.7}}, /*mode_min=*/true)) == 0);
  CHECK(BestTrial(Sweep({{TRIAL_DONE, nan}, {TRIAL_DONE, inf}, {TRIAL_ACTIVE, -inf}})) == -1);
  CHECK(BestTrial(Sweep({{TRIAL_DONE, nan}, {TRIAL_EARLY_STOPPED, 0.1}})) == 1);
  CHECK(BestTrial(Sweep({{TRIAL_WAITING, 0, false}})) == -1);
}

TEST_CASE("a sweep succeeds when a trial ran to its end and some trial reported a finite metric",
          "[sweep][sweep_outcome]") {
  SweepOutcome ok = FinalOutcome(Sweep({{TRIAL_DONE, 0.5}, {TRIAL_EARLY_STOPPED, 0.1}}), /*with_asha=*/true);
  CHECK(ok.state == SWEEP_SUCCEEDED);
  CHECK(ok.reason == "1 of 2 trials ran to the end, 1 early-stopped by ASHA");

  SweepOutcome none_done = FinalOutcome(Sweep({{TRIAL_FAILED, 0.5}, {TRIAL_CANCELLED, 0.1}}), false);
  CHECK(none_done.state == SWEEP_FAILED);
  CHECK(none_done.reason == "0 of 2 trials ran to the end");

  SweepOutcome only_nan = FinalOutcome(Sweep({{TRIAL_DONE, std::nan("")}}), false);
  CHECK(only_nan.state == SWEEP_FAILED);
  CHECK(only_nan.reason ==
        "no trial reported a finite value of its metric 'loss' (only NaN or infinity); 1 of 1 trials ran to the end");

  SweepOutcome silent = FinalOutcome(Sweep({{TRIAL_DONE, 0, false}}), false);
  CHECK(silent.reason == "no trial reported its metric 'loss' (none reported anything); 1 of 1 trials ran to the end");
  CHECK(TrialOver(TRIAL_CANCELLED));
  CHECK_FALSE(TrialOver(TRIAL_WAITING));
}
