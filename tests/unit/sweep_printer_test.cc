// clusterctl's sweep output: best_params.yaml, trials.csv, the trials table
// and `clusterctl jobs` grouping trials under their sweep.
#include <catch2/catch.hpp>

#include "cli/job_printer.h"
#include "cli/sweep_printer.h"

using namespace clusterd;
using namespace clusterd::cli;

namespace {

SweepInfo Sample() {
  SweepInfo sweep;
  sweep.set_sweep_id("sweep-0001");
  sweep.set_state(SWEEP_SUCCEEDED);
  sweep.mutable_spec()->set_name("mlp");
  TuneSpec* tune = sweep.mutable_spec()->mutable_tune();
  tune->set_metric("accuracy");
  tune->add_search_space()->set_name("lr");
  tune->add_search_space()->set_name("act");
  for (int i = 0; i < 2; ++i) {
    TrialInfo* t = sweep.add_trials();
    t->set_index(i);
    t->set_job_id("job-000" + std::to_string(i + 1));
    (*t->mutable_params())["lr"] = i ? "0.01" : "0.001";
    (*t->mutable_params())["act"] = "\"relu\"";
    t->set_has_metric(true);
    t->set_metric(i ? 0.8 : 0.9);
    t->set_iterations(i ? 1 : 4);
    t->set_state(i ? TRIAL_EARLY_STOPPED : TRIAL_DONE);
    if (i) t->set_reason("early-stopped by ASHA at rung 0 (value 0.8 < cutoff 0.9)");
  }
  sweep.set_best_trial(0);
  return sweep;
}

}  // namespace

TEST_CASE("best_params.yaml holds the best trial's parameters in search-space order", "[sweep]") {
  CHECK(BestParamsYaml(Sample()) == "lr: 0.001\nact: \"relu\"\n");
  SweepInfo none = Sample();
  none.set_best_trial(-1);
  CHECK(BestParamsYaml(none).empty());
  // No search space: the best trial has no parameters, and DVC still finds a file.
  SweepInfo empty = Sample();
  empty.mutable_spec()->mutable_tune()->clear_search_space();
  for (auto& trial : *empty.mutable_trials()) trial.clear_params();
  CHECK(BestParamsYaml(empty) == "{}\n");
}

TEST_CASE("trials.csv has a row per trial, quoting what needs it", "[sweep]") {
  CHECK(TrialsCsv(Sample()) ==
        "trial,job_id,state,lr,act,iterations,accuracy,reason\n"
        "0,job-0001,DONE,0.001,relu,4,0.9,\n"
        "1,job-0002,EARLY_STOPPED,0.01,relu,1,0.8,early-stopped by ASHA at rung 0 (value 0.8 < cutoff 0.9)\n");
}

TEST_CASE("the sweep table marks the best trial", "[sweep]") {
  std::string table = FormatSweepTable(Sample());
  CHECK(table.find("best so far: trial 0 accuracy 0.9000 (lr=0.001, act=relu)") != std::string::npos);
  CHECK(table.find("0*") != std::string::npos);
  CHECK(table.find("EARLY_STOPPED") != std::string::npos);
}

TEST_CASE("clusterctl jobs shows trials under one row of their sweep", "[sweep]") {
  std::vector<JobInfo> jobs(4);
  jobs[0].set_job_id("job-0001");
  jobs[0].mutable_spec()->set_name("plain");
  for (int i = 1; i < 4; ++i) {
    jobs[i].set_job_id("job-000" + std::to_string(i + 1));
    jobs[i].mutable_spec()->set_name("mlp-trial-00" + std::to_string(i - 1));
    jobs[i].mutable_spec()->set_sweep_id("sweep-0001");
  }
  std::swap(jobs[2], jobs[0]);  // a trial first, the plain job in between
  std::string table = FormatJobsTable(jobs, 0);
  const size_t sweep_row = table.find("sweep-0001  mlp");
  REQUIRE(sweep_row != std::string::npos);
  CHECK(table.find("3 trials") != std::string::npos);
  CHECK(table.find("  job-0002") > sweep_row);
  CHECK(table.find("  job-0003") > sweep_row);
  CHECK(table.find("  job-0004") > sweep_row);
  CHECK(table.find("job-0001") != std::string::npos);
}
