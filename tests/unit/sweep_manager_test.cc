// SweepManager inside a HeadCore with fake agents and a fake clock: trials
// admitted within max_concurrent, every report through ASHA, a stopped
// trial's job STOPPED with ASHA's reason, and a restarted head that resumes
// the sweep without submitting finished trials again.
#include <catch2/catch.hpp>

#include "sweep_harness.h"

using namespace clusterd;
using namespace clusterd::testing;

TEST_CASE("a sweep admits trials within max_concurrent with their parameters", "[sweep]") {
  QuietLogs quiet;
  SweepHarness h;
  const std::string id = h.SubmitOnNodeA(8, SweepSubmit(5, 2));
  CHECK(id.rfind("sweep-0001", 0) == 0);
  SweepInfo sweep = h.Sweep(id);
  REQUIRE(sweep.trials_size() == 5);
  CHECK(sweep.trials(0).state() == TRIAL_ACTIVE);
  CHECK(sweep.trials(1).state() == TRIAL_ACTIVE);
  CHECK(sweep.trials(2).state() == TRIAL_WAITING);
  JobInfo job = h.Job(sweep.trials(1).job_id());
  const TrialParams params = SampleTrial(sweep.spec().tune(), 1);
  CHECK(job.spec().name() == "mlp-trial-001");
  CHECK(job.spec().sweep_id() == id);
  CHECK(job.spec().entrypoint(1) == "--lr=" + params.at("lr"));
  CHECK(job.spec().config_json().find("\"epochs\":4") != std::string::npos);
  CHECK(job.spec().config_json().find("\"lr\":0.") != std::string::npos);
  CHECK(job.spec().trial_params().at("lr") == params.at("lr"));
  CHECK(h.head->jobs().List().size() == 2);
}

TEST_CASE("without max_concurrent a sweep admits as many trials as the nodes hold", "[sweep]") {
  QuietLogs quiet;
  SweepHarness h;
  const std::string id = h.SubmitOnNodeA(3, SweepSubmit(6, 0));
  CHECK(h.head->jobs().List().size() == 3);
}

TEST_CASE("ASHA stops a trial below the rung's cutoff, the next trial takes its place", "[sweep]") {
  QuietLogs quiet;
  SweepHarness h;
  const std::string id = h.SubmitOnNodeA(2, SweepSubmit(3, 2));
  SweepInfo sweep = h.Sweep(id);
  const std::string t0 = sweep.trials(0).job_id(), t1 = sweep.trials(1).job_id();
  h.StartOnNodeA({t0, t1});
  h.Report("a", t0, 0.80);
  CHECK(h.Sweep(id).trials(0).state() == TRIAL_ACTIVE);
  h.Report("a", t1, 0.50);
  sweep = h.Sweep(id);
  CHECK(sweep.trials(1).state() == TRIAL_EARLY_STOPPED);
  CHECK(sweep.trials(1).reason() == "early-stopped by ASHA at rung 0 (value 0.5 < cutoff 0.8)");
  CHECK(h.GotKill("a", 0));
  // Its place goes to trial 2 at once; its job waits for the CPU.
  CHECK(sweep.trials(2).state() == TRIAL_ACTIVE);
  CHECK(sweep.trials(1).job_state() == RUNNING);  // being stopped
  h.Exit("a", t1, 0, 0, 0, 15);
  CHECK(h.Job(t1).state() == STOPPED);
  CHECK(h.Job(t1).reason() == "early-stopped by ASHA at rung 0 (value 0.5 < cutoff 0.8)");
  // A decided trial's job_state follows its job after the decision.
  CHECK(h.Sweep(id).trials(1).job_state() == STOPPED);
  CHECK(sweep.best_trial() == 0);

  // Trial 0 runs to max_t and exits 0: DONE; the sweep goes on with trial 2.
  for (double acc : {0.82, 0.84, 0.86}) h.Report("a", t0, acc);
  sweep = h.Sweep(id);
  CHECK(sweep.trials(0).state() == TRIAL_DONE);
  CHECK(sweep.trials(0).iterations() == 4);
  h.Exit("a", t0, 0, 0, 0);
  CHECK(h.Sweep(id).state() == SWEEP_RUNNING);

  // A restarted head: the sweep and its finished trials as they were, nothing resubmitted.
  const size_t jobs_before = h.head->jobs().List().size();
  h.Restart();
  sweep = h.Sweep(id);
  CHECK(sweep.state() == SWEEP_RUNNING);
  CHECK(sweep.trials(0).state() == TRIAL_DONE);
  CHECK(sweep.trials(0).iterations() == 4);  // replayed, not counted twice
  CHECK(sweep.trials(0).metric() == Approx(0.86));
  CHECK(sweep.trials(1).state() == TRIAL_EARLY_STOPPED);
  CHECK(sweep.trials(1).iterations() == 1);
  CHECK(sweep.trials(2).state() == TRIAL_ACTIVE);
  CHECK(sweep.best_trial() == 0);
  h.head->Tick();
  CHECK(h.head->jobs().List().size() == jobs_before);

  // Stopping the sweep ends its last trial.
  auto stopped = h.head->sweeps().Stop(id);
  REQUIRE(stopped.ok());
  CHECK(stopped->state() == SWEEP_STOPPED);
  CHECK(h.Job(sweep.trials(2).job_id()).state() == STOPPED);
  CHECK(h.head->sweeps().Submit(SweepSubmit(1, 1))->rfind("sweep-0002", 0) == 0);
}

// Rule 11: the ranks' clocks are other machines'. A report stamped a
// minute early by a machine whose clock is behind must not move ahead of
// the reports the head took before it when a restarted head rebuilds the
// rungs, or the replay stops a trial the old head let go on.
TEST_CASE("a restarted head rebuilds ASHA's rungs in the order it took the reports, whatever the ranks' clocks say",
          "[sweep]") {
  QuietLogs quiet;
  SweepHarness h;
  h.AddNode("a", 1);
  h.AddNode("b", 1);
  auto id = h.head->sweeps().Submit(SweepSubmit(2, 2));
  REQUIRE(id.ok());
  SweepInfo sweep = h.Sweep(*id);
  const std::string t0 = sweep.trials(0).job_id(), t1 = sweep.trials(1).job_id();
  const std::string n0 = h.Job(t0).attempts(0).ranks(0).node_name(), n1 = h.Job(t1).attempts(0).ranks(0).node_name();
  REQUIRE(n0 != n1);
  h.Start(n0, t0);
  h.Start(n1, t1);
  const int64_t now = h.clock.UnixMillis();
  h.Report(n0, t0, 0.50, 0, "", now);           // first at rung 0: goes on
  h.Report(n1, t1, 0.60, 0, "", now - 60'000);  // 0.60 >= cutoff 0.50: goes on; its machine's clock is behind
  sweep = h.Sweep(*id);
  REQUIRE(sweep.trials(0).state() == TRIAL_ACTIVE);
  REQUIRE(sweep.trials(1).state() == TRIAL_ACTIVE);

  h.Restart();
  sweep = h.Sweep(*id);
  // By the ranks' clocks t1 came first, and t0's 0.50 would fall below
  // its cutoff of 0.60.
  CHECK(sweep.trials(0).state() == TRIAL_ACTIVE);
  CHECK(sweep.trials(1).state() == TRIAL_ACTIVE);
  CHECK(sweep.trials(0).iterations() == 1);
  CHECK(sweep.trials(1).iterations() == 1);
  // Reports after the restart are numbered on from the journal's last.
  const int64_t last = h.head->jobs().MetricsOf(t1)->at(0).received_seq();
  CHECK(last > h.head->jobs().MetricsOf(t0)->at(0).received_seq());
  h.AddNode("c", 1);
  const std::string plain = h.Submit(1, 1, PACK, 0);
  REQUIRE(h.Job(plain).attempts(0).ranks(0).node_name() == "c");
  h.Start("c", plain);
  h.Report("c", plain, 0.1);
  CHECK(h.head->jobs().MetricsOf(plain)->at(0).received_seq() == last + 1);
}

TEST_CASE("a retried trial's training_iteration goes on from the checkpoint it resumed from, within max_t",
          "[sweep]") {
  QuietLogs quiet;
  SweepHarness h;
  SubmitJobRequest request = SweepSubmit(1, 1);
  request.mutable_spec()->set_max_failures(1);
  const std::string id = h.SubmitOnNodeA(1, request);
  const std::string job = h.Sweep(id).trials(0).job_id();
  h.AnswerPort("a", 1000);
  h.Start("a", job);
  h.Report("a", job, 0.50, 0, "/ckpt/checkpoint_000000");
  h.Report("a", job, 0.60, 0, "/ckpt/checkpoint_000001/");
  h.Report("a", job, 0.70, 0);  // iteration 3; its checkpoint was never written
  h.Exit("a", job, 0, 0, 1);
  h.Advance(2000);  // the restart delay
  h.AnswerPort("a", 1001);
  JobInfo info = h.Job(job);
  REQUIRE(info.attempts_size() == 2);
  CHECK(info.attempts(0).restored_checkpoint().empty());
  CHECK(info.attempts(1).restored_checkpoint() == "checkpoint_000001");

  // Attempt 1 redoes the third epoch: iteration 3 again, not 1.
  h.Start("a", job, 1);
  h.Report("a", job, 0.72, 1);
  SweepInfo sweep = h.Sweep(id);
  CHECK(sweep.trials(0).state() == TRIAL_ACTIVE);
  CHECK(sweep.trials(0).iterations() == 3);
  h.Report("a", job, 0.74, 1);
  sweep = h.Sweep(id);
  CHECK(sweep.trials(0).state() == TRIAL_DONE);
  CHECK(sweep.trials(0).iterations() == 4);
  CHECK(sweep.trials(0).reason() == "reached max_t (4 training_iteration)");
  // It gets trial_finish_grace_ms to end by itself, then it is stopped.
  CHECK_FALSE(h.GotKill("a", 1));
  h.Advance(h.config.trial_finish_grace_ms - 500);
  CHECK_FALSE(h.GotKill("a", 1));
  h.Advance(500);
  CHECK(h.GotKill("a", 1));

  // A restarted head counts the same from the journalled reports and attempts.
  h.Restart();
  CHECK(h.Sweep(id).trials(0).iterations() == 4);
  CHECK(h.Job(job).attempts(1).restored_checkpoint() == "checkpoint_000001");
}

TEST_CASE("a sweep whose trials all fail is FAILED, and failed trials leave the rungs", "[sweep]") {
  QuietLogs quiet;
  SweepHarness h;
  const std::string id = h.SubmitOnNodeA(1, SweepSubmit(2, 1));
  for (int i = 0; i < 2; ++i) {
    const std::string job = h.Sweep(id).trials(i).job_id();
    REQUIRE_FALSE(job.empty());
    h.AnswerPort("a", 1000 + i);
    h.Start("a", job);
    h.Exit("a", job, 0, 0, 1);
    h.head->Tick();
    CHECK(h.Sweep(id).trials(i).state() == TRIAL_FAILED);
  }
  CHECK(h.Sweep(id).state() == SWEEP_FAILED);
}

TEST_CASE("ListSweeps pages sweeps in submission order with the last id as token, and refuses a foreign token",
          "[sweep]") {
  QuietLogs quiet;
  SweepHarness h;
  h.AddNode("a", 8);
  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i) ids.push_back(*h.head->sweeps().Submit(SweepSubmit(1, 1)));
  ListSweepsRequest request;
  request.set_page_size(2);
  std::vector<std::string> seen;
  std::vector<int> sizes;
  for (;;) {
    auto page = h.head->sweeps().ListPage(request);
    REQUIRE(page.ok());
    sizes.push_back(page->sweeps_size());
    for (const auto& sweep : page->sweeps()) seen.push_back(sweep.sweep_id());
    if (page->next_page_token().empty()) break;
    CHECK(page->next_page_token() == seen.back());
    request.set_page_token(page->next_page_token());
  }
  CHECK(seen == ids);
  CHECK(sizes == std::vector<int>{2, 2, 1});
  // The default page holds them all; a token that names no sweep is refused.
  auto all = h.head->sweeps().ListPage(ListSweepsRequest());
  REQUIRE(all.ok());
  CHECK(all->sweeps_size() == 5);
  CHECK(all->next_page_token().empty());
  request.set_page_token("job-0001");
  auto refused = h.head->sweeps().ListPage(request);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message() == "'job-0001' is not a page token of ListSweeps");
}

TEST_CASE("a trial's start and end journal that trial, not the whole sweep, and replay the same", "[sweep]") {
  QuietLogs quiet;
  SweepHarness h;
  const std::string id = h.SubmitOnNodeA(1, SweepSubmit(500, 1));
  SweepInfo sweep = h.Sweep(id);
  const size_t whole = sweep.ByteSizeLong();
  REQUIRE(whole > 15'000);  // 500 trials with their parameters
  const std::string t0 = sweep.trials(0).job_id();
  h.StartOnNodeA({t0});
  const uint64_t before = h.sweep_store.bytes();
  h.Exit("a", t0, 0, 0, 1);  // trial 0 fails (no retries), trial 1 is admitted
  sweep = h.Sweep(id);
  REQUIRE(sweep.trials(0).state() == TRIAL_FAILED);
  REQUIRE(sweep.trials(1).state() == TRIAL_ACTIVE);
  // Two trial records (0's end, 1's start), each a few hundred bytes.
  CHECK(h.sweep_store.bytes() - before < 1'000);

  h.Restart();
  SweepInfo replayed = h.Sweep(id);
  CHECK(replayed.trials(0).state() == TRIAL_FAILED);
  CHECK(replayed.trials(0).reason() == sweep.trials(0).reason());
  CHECK(replayed.trials(1).state() == TRIAL_ACTIVE);
  CHECK(replayed.trials(1).job_id() == sweep.trials(1).job_id());
  CHECK(replayed.trials(2).state() == TRIAL_WAITING);
}

// The next sweep number is journaled, not rebuilt from the sweeps left:
// else a restarted head hands out the newest deleted sweep's id again.
TEST_CASE("a deleted sweep's id is not handed out again after a restart", "[sweep]") {
  QuietLogs quiet;
  SweepHarness h;
  h.AddNode("a", 1);
  const std::string first = *h.head->sweeps().Submit(PlainSweepSubmit(1, 1));
  const std::string second = *h.head->sweeps().Submit(PlainSweepSubmit(1, 1));
  REQUIRE(second.rfind("sweep-0002", 0) == 0);
  REQUIRE(h.head->sweeps().Stop(second).ok());
  REQUIRE(h.head->sweeps().Delete(second).ok());
  h.Restart();
  CHECK(h.head->sweeps().Get(first).ok());
  CHECK(h.head->sweeps().Submit(PlainSweepSubmit(1, 1))->rfind("sweep-0003", 0) == 0);
  h.Restart();  // and again, from the journal the delete compacted
  CHECK(h.head->sweeps().Submit(PlainSweepSubmit(1, 1))->rfind("sweep-0004", 0) == 0);
}

TEST_CASE("a trial's ranks get its values as CLUSTER_PARAM_ variables, which its string entrypoint names", "[sweep]") {
  QuietLogs quiet;
  SweepHarness h;
  SubmitJobRequest request = SweepSubmit(1, 1);
  request.mutable_spec()->clear_entrypoint();
  for (const char* arg : {"/bin/sh", "-c", "/bin/train --lr={lr}"}) request.mutable_spec()->add_entrypoint(arg);
  const std::string id = h.SubmitOnNodeA(8, request);
  const SweepInfo sweep = h.Sweep(id);
  const JobInfo job = h.Job(sweep.trials(0).job_id());
  CHECK(job.spec().entrypoint(2) == "/bin/train --lr=\"${CLUSTER_PARAM_lr}\"");
  h.AnswerPort("a", 29500);
  const std::vector<LaunchRanks> launches = h.Launches("a");
  REQUIRE(launches.size() == 1);
  CHECK(EnvOf(launches[0], 0)["CLUSTER_PARAM_lr"] == SampleTrial(sweep.spec().tune(), 0).at("lr"));
}

TEST_CASE("a sweep whose log_limit is above log_limit_max_mb is refused at submit, naming the key", "[sweep][log_limit]") {
  QuietLogs quiet;
  SweepHarness h;
  h.config.log_limit_max_mb = 1;
  h.head = std::make_unique<HeadCore>(&h.clock, h.config, &h.store, &h.logs, nullptr);
  SubmitJobRequest request = SweepSubmit(3, 1);
  request.mutable_spec()->set_log_limit_bytes(2 << 20);
  auto refused = h.head->sweeps().Submit(request);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message().find("log_limit_max_mb") != std::string::npos);
  CHECK(h.head->sweeps().Submit(SweepSubmit(1, 1)).ok());  // nothing else refused
}

TEST_CASE("a sweep whose trials ask for more workers than the head's max_num_workers is refused at submit",
          "[sweep][limits]") {
  QuietLogs quiet;
  SweepHarness h;
  h.config.max_num_workers = 2;
  h.Restart();
  SubmitJobRequest request = SweepSubmit(3, 1);
  request.mutable_spec()->set_num_workers(3);
  auto refused = h.head->sweeps().Submit(request);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message() == "key 'num_workers': expected an integer between 1 and 2, got 3");
  CHECK(h.head->sweeps().List().empty());
  request.mutable_spec()->set_num_workers(2);
  CHECK(h.head->sweeps().Submit(request).ok());
}

TEST_CASE("a trial the queue's limit refuses waits, and starts once there is room", "[sweep][limits]") {
  QuietLogs quiet;
  SweepHarness h;
  h.config.max_submitted_jobs = 1;
  h.Restart();
  h.AddNode("a", 1);
  const std::string plain = h.Submit(1, 1, PACK, 0);  // the queue's one place
  auto id = h.head->sweeps().Submit(PlainSweepSubmit(1, 1));
  REQUIRE(id.ok());
  h.head->Tick();
  CHECK(h.Sweep(*id).trials(0).state() == TRIAL_WAITING);
  h.AnswerPort("a", 1000);
  h.Start("a", plain);
  h.Exit("a", plain, 0, 0, 0);
  h.head->Tick();
  CHECK(h.Sweep(*id).trials(0).state() == TRIAL_ACTIVE);
}
