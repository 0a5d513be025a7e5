// How a sweep ends and what it leaves: the best trial (never NaN), a
// metric nobody reported, a trial's last epoch at max_t, deleting it, and a
// trial that waited through a head restart.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "sweep_harness.h"

using namespace clusterd;
using namespace clusterd::testing;

TEST_CASE("a NaN or infinite metric is never the best trial whatever order the trials report in", "[sweep]") {
  QuietLogs quiet;
  SweepHarness h;
  const std::string id = h.SubmitOnNodeA(3, PlainSweepSubmit(3, 3));
  const double values[] = {std::nan(""), 0.25, std::numeric_limits<double>::infinity()};
  for (int i = 0; i < 3; ++i) {
    h.RunTrial("a", id, i, values[i]);
    CHECK(h.Sweep(id).best_trial() == (i == 0 ? -1 : 1));
  }
}

TEST_CASE("a sweep whose trials never report its metric is FAILED and names what they reported", "[sweep]") {
  QuietLogs quiet;
  SweepHarness h;
  SubmitJobRequest request = PlainSweepSubmit(2, 2);
  request.mutable_spec()->mutable_tune()->set_metric("acuracy");  // a typo of what the program reports
  const std::string id = h.SubmitOnNodeA(2, request);
  for (int i = 0; i < 2; ++i) h.RunTrial("a", id, i, 0.5);
  const SweepInfo sweep = h.Sweep(id);
  CHECK(sweep.trials(0).state() == TRIAL_DONE);
  CHECK(sweep.state() == SWEEP_FAILED);
  CHECK(sweep.reason() == "no trial reported its metric 'acuracy' (they reported accuracy); 2 of 2 trials ran to the end");
  CHECK(sweep.best_trial() == -1);
}

TEST_CASE("a sweep whose trials report only NaN is FAILED", "[sweep]") {
  QuietLogs quiet;
  SweepHarness h;
  const std::string id = h.SubmitOnNodeA(1, PlainSweepSubmit(1, 1));
  h.RunTrial("a", id, 0, std::nan(""));
  const SweepInfo sweep = h.Sweep(id);
  CHECK(sweep.state() == SWEEP_FAILED);
  CHECK(sweep.reason() ==
        "no trial reported a finite value of its metric 'accuracy' (only NaN or infinity); 1 of 1 trials ran to the end");
}

TEST_CASE("a trial that reaches max_t at its last epoch and exits by itself succeeds and keeps its outputs",
          "[sweep]") {
  QuietLogs quiet;
  SweepHarness h;
  SubmitJobRequest request = SweepSubmit(1, 1);
  request.mutable_spec()->add_outputs("model.pt");
  const std::string id = h.SubmitOnNodeA(1, request);
  const std::string job = h.Sweep(id).trials(0).job_id();
  h.AnswerPort("a", 1000);
  h.Start("a", job);
  for (double accuracy : {0.5, 0.6, 0.7, 0.8}) h.Report("a", job, accuracy);
  CHECK(h.Sweep(id).trials(0).state() == TRIAL_DONE);
  // The program writes its model and exits 0 a moment after its last report.
  h.Advance(1000);
  h.Exit("a", job, 0, 0, 0);
  h.head->Tick();
  CHECK_FALSE(h.GotKill("a", 0));
  CHECK(h.Job(job).state() == SUCCEEDED);
  const SweepInfo sweep = h.Sweep(id);
  CHECK(sweep.trials(0).state() == TRIAL_DONE);
  CHECK(sweep.trials(0).reason() == "reached max_t (4 training_iteration)");
  CHECK(sweep.trials(0).job_state() == SUCCEEDED);
  CHECK(sweep.state() == SWEEP_SUCCEEDED);
}

TEST_CASE("an ended sweep is deleted with its trials' jobs and a running one is refused", "[sweep]") {
  QuietLogs quiet;
  SweepHarness h;
  const std::string id = h.SubmitOnNodeA(1, PlainSweepSubmit(1, 1));
  const std::string job = h.Sweep(id).trials(0).job_id();
  CHECK(h.head->sweeps().Delete(id).status().message() ==
        "sweep " + id + " is RUNNING: stop it first (`clusterctl stop " + id + "`)");
  h.RunTrial("a", id, 0, 0.5);
  REQUIRE(h.Sweep(id).state() == SWEEP_SUCCEEDED);
  auto deleted = h.head->sweeps().Delete(id);
  REQUIRE(deleted.ok());
  CHECK(deleted->sweep_id() == id);
  CHECK(h.head->sweeps().Get(id).status().code() == Status::Code::kNotFound);
  CHECK(h.head->jobs().Get(job).status().code() == Status::Code::kNotFound);
  // Gone for a restarted head too.
  h.Restart();
  CHECK(h.head->sweeps().Get(id).status().code() == Status::Code::kNotFound);
  CHECK(h.head->sweeps().List().empty());
}

// A trial still waiting for its turn when the head restarts is not
// decided: once admitted, what it reports counts (iterations, metric, the
// sweep's best).
TEST_CASE("a trial still waiting when the head restarts is followed once it runs", "[sweep]") {
  QuietLogs quiet;
  SweepHarness h;
  const std::string id = h.SubmitOnNodeA(1, PlainSweepSubmit(2, 1));
  const std::string first = h.Sweep(id).trials(0).job_id();
  REQUIRE(h.Sweep(id).trials(1).state() == TRIAL_WAITING);
  h.AnswerPort("a", 1000);
  h.Start("a", first);

  h.Restart();
  auto conn = std::make_shared<FakeAgentConnection>();
  h.agents["a"] = conn;
  h.head->OnAgentMessage(conn, RegisterAgain("a", 1, first, {0}));
  REQUIRE(h.Job(first).state() == RUNNING);
  h.Report("a", first, 0.5);
  h.Exit("a", first, 0, 0, 0);
  h.head->Tick();
  REQUIRE(h.Sweep(id).trials(1).state() == TRIAL_ACTIVE);
  h.RunTrial("a", id, 1, 0.75);
  SweepInfo sweep = h.Sweep(id);
  REQUIRE(sweep.trials(1).iterations() == 1);
  REQUIRE(sweep.trials(1).has_metric());
  REQUIRE(sweep.trials(1).metric() == 0.75);
  REQUIRE(sweep.best_trial() == 1);
  REQUIRE(sweep.state() == SWEEP_SUCCEEDED);
}
