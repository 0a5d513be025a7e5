// SweepManager inside a HeadCore with fake agents and a fake clock, for
// the sweep tests: a sweep's request and a head whose trials' ranks the
// test drives.
#pragma once

#include <string>

#include "common/search_space.h"
#include "head_harness.h"

namespace clusterd::testing {

inline SubmitJobRequest SweepSubmit(int samples, int max_concurrent) {
  SubmitJobRequest request;
  JobSpec* spec = request.mutable_spec();
  spec->set_name("mlp");
  spec->add_entrypoint("/bin/train");
  spec->add_entrypoint("--lr={lr}");
  spec->set_working_dir("/work");
  spec->set_working_dir_mode(SHARED);
  spec->set_num_workers(1);
  (*spec->mutable_resources_per_worker()->mutable_amounts())[kCpu] = 1;
  spec->set_config_json("{\"epochs\":4}");
  TuneSpec* tune = spec->mutable_tune();
  tune->set_metric("accuracy");
  tune->set_num_samples(samples);
  tune->set_max_concurrent(max_concurrent);
  tune->set_seed(3);
  SearchDimension* lr = tune->add_search_space();
  lr->set_name("lr");
  lr->set_distribution("loguniform");
  lr->set_low(1e-4);
  lr->set_high(1e-1);
  AshaSpec* asha = tune->mutable_asha();
  asha->set_time_attr("training_iteration");
  asha->set_max_t(4);
  asha->set_grace_period(1);
  asha->set_reduction_factor(2);
  return request;
}

struct SweepHarness : Harness {
  MemoryJobStore sweep_store;
  SweepHarness() { Restart(); }
  // A new head over the same journals, as after a crash.
  void Restart() {
    agents.clear();
    head = std::make_unique<HeadCore>(&clock, config, &store, &logs, nullptr, &sweep_store);
    REQUIRE(head->Restore().ok());
  }
  SweepInfo Sweep(const std::string& id) { return *head->sweeps().Get(id); }
  // unix_ms 0: the head's clock; else the rank's machine's.
  void Report(const std::string& node, const std::string& job, double accuracy, int attempt = 0,
              const std::string& checkpoint = "", int64_t unix_ms = 0) {
    AgentMessage m;
    m.mutable_metrics()->set_unix_ms(unix_ms);
    m.mutable_metrics()->set_job_id(job);
    m.mutable_metrics()->set_attempt(attempt);
    m.mutable_metrics()->set_rank(0);
    m.mutable_metrics()->set_checkpoint(checkpoint);
    (*m.mutable_metrics()->mutable_values())["accuracy"] = accuracy;
    From(node, m);
  }
  void Start(const std::string& node, const std::string& job, int attempt = 0) {
    AgentMessage m;
    m.mutable_rank_started()->set_job_id(job);
    m.mutable_rank_started()->set_attempt(attempt);
    m.mutable_rank_started()->set_rank(0);
    m.mutable_rank_started()->set_pid(100);
    From(node, m);
  }

  // Trial `index` of `sweep` runs on `node`, reports `metric` once and
  // exits with `exit_code`.
  void RunTrial(const std::string& node, const std::string& sweep, int index, double metric, int exit_code = 0) {
    const std::string job = Sweep(sweep).trials(index).job_id();
    AnswerPort(node, 1000 + index);
    Start(node, job);
    Report(node, job, metric);
    Exit(node, job, 0, 0, exit_code);
    head->Tick();
  }
};

// A sweep of `samples` trials without ASHA.
inline SubmitJobRequest PlainSweepSubmit(int samples, int max_concurrent) {
  SubmitJobRequest request = SweepSubmit(samples, max_concurrent);
  request.mutable_spec()->mutable_tune()->clear_asha();
  return request;
}

}  // namespace clusterd::testing
