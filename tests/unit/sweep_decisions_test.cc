// A sweep's decisions alone, on hand-made reports: training_iteration
// counted by the head (a retry goes on from its restored checkpoint), ASHA's
// stops and max_t, stop criteria, and a trial decided about once.
#include <catch2/catch.hpp>

#include <string>

#include "daemon/head/sweep_decisions.h"

using namespace clusterd;

namespace {

TuneSpec Tune() {
  TuneSpec tune;
  tune.set_metric("accuracy");
  return tune;
}

TuneSpec AshaTune() {
  TuneSpec tune = Tune();
  AshaSpec* asha = tune.mutable_asha();
  asha->set_time_attr("training_iteration");
  asha->set_max_t(4);
  asha->set_grace_period(1);
  asha->set_reduction_factor(2);
  return tune;
}

TrialInfo Trial(int index) {
  TrialInfo trial;
  trial.set_index(index);
  trial.set_state(TRIAL_ACTIVE);
  return trial;
}

MetricRecord Report(double accuracy, int attempt = 0, const std::string& checkpoint = "", int rank = 0) {
  MetricRecord record;
  record.set_rank(rank);
  record.set_attempt(attempt);
  record.set_checkpoint(checkpoint);
  (*record.mutable_values())["accuracy"] = accuracy;
  return record;
}

}  // namespace

TEST_CASE("ASHA's decisions stop a trial below the rung's cutoff and end one at max_t", "[sweep][sweep_decisions]") {
  SweepDecisions decisions(AshaTune());
  REQUIRE(decisions.has_asha());
  TrialInfo good = Trial(0), bad = Trial(1);
  auto first = decisions.OnReport(good, Report(0.9), nullptr);
  CHECK(first.metric);
  CHECK_FALSE(first.stop);
  CHECK(good.iterations() == 1);
  CHECK(good.metric() == 0.9);

  auto stopped = decisions.OnReport(bad, Report(0.1), nullptr);
  CHECK(stopped.stop);
  CHECK(stopped.ends_as == TRIAL_EARLY_STOPPED);
  CHECK(bad.state() == TRIAL_EARLY_STOPPED);
  CHECK(bad.reason().rfind("early-stopped by ASHA", 0) == 0);
  CHECK(decisions.decided(1));
  CHECK_FALSE(decisions.decided(0));

  CHECK_FALSE(decisions.OnReport(good, Report(0.95, 0, "", /*rank=*/1), nullptr).metric);  // rank 1 counts nothing
  CHECK(good.iterations() == 1);
  for (int i = 2; i <= 3; ++i) CHECK_FALSE(decisions.OnReport(good, Report(0.9), nullptr).stop);
  auto done = decisions.OnReport(good, Report(0.9), nullptr);
  CHECK(done.stop);
  CHECK(done.ends_as == TRIAL_DONE);
  CHECK(good.state() == TRIAL_DONE);
  CHECK(good.reason() == "reached max_t (4 training_iteration)");
}

TEST_CASE("a retried trial's iterations go on from the checkpoint its attempt restored", "[sweep][sweep_decisions]") {
  SweepDecisions decisions(Tune());
  CHECK_FALSE(decisions.has_asha());
  TrialInfo trial = Trial(0);
  decisions.OnReport(trial, Report(0.1, 0, "/ckpt/checkpoint_000001"), nullptr);
  decisions.OnReport(trial, Report(0.2, 0, "/ckpt/checkpoint_000002"), nullptr);
  decisions.OnReport(trial, Report(0.3), nullptr);
  REQUIRE(trial.iterations() == 3);

  JobInfo job;
  AttemptInfo* retry = job.add_attempts();
  retry->set_attempt(1);
  retry->set_restored_checkpoint("checkpoint_000001");
  decisions.OnReport(trial, Report(0.4, 1), &job);
  CHECK(trial.iterations() == 2);  // the checkpoint's report was the first
  // An attempt that restored nothing starts from zero.
  decisions.OnReport(trial, Report(0.5, 2), &job);
  CHECK(trial.iterations() == 1);
}

TEST_CASE("a stop criterion ends a trial as done", "[sweep][sweep_decisions]") {
  TuneSpec tune = Tune();
  (*tune.mutable_stop())["accuracy"] = 0.95;
  SweepDecisions decisions(tune);
  TrialInfo trial = Trial(3);
  CHECK_FALSE(decisions.OnReport(trial, Report(0.9), nullptr).stop);
  auto reached = decisions.OnReport(trial, Report(0.96), nullptr);
  CHECK(reached.stop);
  CHECK(trial.state() == TRIAL_DONE);
  CHECK(trial.reason() == "reached the stop criterion accuracy >= 0.95");
  CHECK(decisions.decided(3));
}
