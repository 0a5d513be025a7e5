// SweepManager inside a HeadCore with fake agents and a fake clock, for
// the sweep tests: a head whose trials' ranks the test drives, and the
// sweep's request (sweep_spec.h).
#pragma once

#include <string>
#include <vector>

#include "common/jobspec/search_space.h"
#include "head_harness.h"
#include "sweep_spec.h"  // SweepSubmit, PlainSweepSubmit

namespace clusterd::testing {

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
  // Node a of `cpus` CPUs, then the sweep `request` submitted; its id.
  std::string SubmitOnNodeA(double cpus, const SubmitJobRequest& request) {
    AddNode("a", cpus);
    auto id = head->sweeps().Submit(request);
    REQUIRE(id.ok());
    return *id;
  }
  // Answers node a's port requests, then starts the rank 0 of each of `jobs` there.
  void StartOnNodeA(const std::vector<std::string>& jobs) {
    AnswerPort("a", 1000);
    for (const std::string& job : jobs) Start("a", job);
  }
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

}  // namespace clusterd::testing
