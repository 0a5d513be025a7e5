// The sweep scheduler's own cost per metric report: 1,000 simulated trials
// of a sweep under ASHA (max_t 100, rf 4) inside a HeadCore with fake
// agents, a fake clock and in-memory journals, every report going the path
// a real one takes (agent message -> JobManager -> SweepManager::Poll ->
// ASHA). Compared with the same reports for plain jobs (no sweep), and with
// ASHA's OnResult alone. Prints one table.
//   tune_overhead_bench [--trials 1000] [--concurrent 64]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "common/logging.h"
#include "daemon/head/asha.h"
#include "daemon/head/head_core.h"
#include "tests/unit/fake_agent_connection.h"
#include "tests/unit/sweep_spec.h"

using namespace clusterd;

namespace {

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// A plain job of one 1-CPU worker, or a sweep of `trials` such trials
// (the sweep tests' sweep) under ASHA with max_t 100 and reduction factor 4.
JobSpec Spec(int trials, int concurrent, bool sweep) {
  if (sweep) {
    JobSpec spec = testing::SweepSubmit(trials, concurrent).spec();
    spec.mutable_tune()->set_seed(1);
    spec.mutable_tune()->mutable_asha()->set_max_t(100);
    spec.mutable_tune()->mutable_asha()->set_reduction_factor(4);
    return spec;
  }
  JobSpec spec;
  spec.set_name("bench");
  spec.add_entrypoint("/bin/true");
  spec.set_working_dir("/work");
  spec.set_working_dir_mode(SHARED);
  spec.set_num_workers(1);
  (*spec.mutable_resources_per_worker()->mutable_amounts())["CPU"] = 1;
  return spec;
}

struct Measured {
  long reports = 0;
  double seconds = 0;
};

// Runs `trials` trials (or plain jobs) `concurrent` at a time; each reports
// until it is stopped or reaches 100 reports, then exits 0.
Measured Drive(int trials, int concurrent, bool sweep) {
  FakeClock clock;
  MemoryJobStore store, sweep_store;
  LogStore logs("");
  Config config;
  HeadCore head(&clock, config, &store, &logs, nullptr, &sweep_store);
  auto conn = std::make_shared<testing::FakeAgentConnection>();
  AgentMessage reg;
  reg.mutable_register_()->set_name("n");
  reg.mutable_register_()->set_address("10.0.0.1");
  reg.mutable_register_()->set_instance_id("n1");
  (*reg.mutable_register_()->mutable_total()->mutable_amounts())["CPU"] = concurrent;
  head.OnAgentMessage(conn, reg);
  std::string sweep_id;
  if (sweep) {
    SubmitJobRequest request;
    *request.mutable_spec() = Spec(trials, concurrent, true);
    sweep_id = *head.sweeps().Submit(request);
  } else {
    for (int i = 0; i < trials; ++i) {
      SubmitJobRequest request;
      *request.mutable_spec() = Spec(trials, concurrent, false);
      (void)head.jobs().Submit(request);
    }
  }
  Measured result;
  std::vector<int> reported(static_cast<size_t>(trials) * 2 + 10, 0);
  size_t answered = 0;
  std::set<std::string> killed_jobs;
  while (true) {
    // Answer new port reservations and start the ranks.
    for (; answered < conn->sent.size(); ++answered) {
      const HeadMessage& sent = conn->sent[answered];
      if (sent.has_kill()) killed_jobs.insert(sent.kill().job_id());
      if (!sent.has_reserve_port()) continue;
      AgentMessage port;
      port.mutable_port_reserved()->set_job_id(sent.reserve_port().job_id());
      port.mutable_port_reserved()->set_attempt(0);
      port.mutable_port_reserved()->set_port(1000);
      head.OnAgentMessage(conn, port);
      AgentMessage started;
      started.mutable_rank_started()->set_job_id(sent.reserve_port().job_id());
      started.mutable_rank_started()->set_rank(0);
      started.mutable_rank_started()->set_pid(1);
      head.OnAgentMessage(conn, started);
    }
    bool any = false;
    for (const JobInfo& job : head.jobs().List()) {
      if (job.state() != RUNNING) continue;
      any = true;
      int number = std::atoi(job.job_id().c_str() + 4);
      int& n = reported[static_cast<size_t>(number)];
      const bool killed = killed_jobs.count(job.job_id()) > 0;
      if (n >= 100 || killed) {
        AgentMessage exited;
        exited.mutable_rank_exited()->set_job_id(job.job_id());
        exited.mutable_rank_exited()->set_signal(killed ? 15 : 0);
        head.OnAgentMessage(conn, exited);
        continue;
      }
      ++n;
      AgentMessage m;
      m.mutable_metrics()->set_job_id(job.job_id());
      m.mutable_metrics()->set_rank(0);
      // Better trials have higher numbers, with noise, so that ASHA has work.
      (*m.mutable_metrics()->mutable_values())["accuracy"] = (number % 97) / 97.0 + n * 1e-3;
      // Only the report itself is timed, not this driver.
      auto start = std::chrono::steady_clock::now();
      head.OnAgentMessage(conn, m);
      result.seconds += Seconds(start);
      ++result.reports;
    }
    clock.AdvanceMillis(10);
    head.Tick();
    if (!any && (sweep ? head.sweeps().Get(sweep_id)->state() != SWEEP_RUNNING : true)) break;
  }
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  int trials = 1000, concurrent = 64;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--trials")) trials = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--concurrent")) concurrent = std::atoi(argv[i + 1]);
  }
  SetLogLevel(LogLevel::kError);
  // ASHA alone: 1,000 trials x up to 100 reports, arrivals interleaved.
  AshaSpec spec = Spec(trials, concurrent, true).tune().asha();
  Asha asha(spec, false);
  std::vector<bool> stopped(static_cast<size_t>(trials), false);
  long asha_reports = 0;
  auto start = std::chrono::steady_clock::now();
  for (int t = 1; t <= 100; ++t) {
    for (int trial = 0; trial < trials; ++trial) {
      if (stopped[static_cast<size_t>(trial)]) continue;
      ++asha_reports;
      auto d = asha.OnResult(trial, t, (trial % 97) / 97.0 + t * 1e-3);
      if (d.action != Asha::Action::kContinue) stopped[static_cast<size_t>(trial)] = true;
    }
  }
  const double asha_s = Seconds(start);
  Measured plain = Drive(trials, concurrent, false);
  Measured swept = Drive(trials, concurrent, true);
  std::printf("| path | trials | concurrent | reports | per report (us) |\n| --- | --- | --- | --- | --- |\n");
  std::printf("| ASHA OnResult alone | %d | all | %ld | %.2f |\n", trials, asha_reports, asha_s / asha_reports * 1e6);
  std::printf("| head, plain jobs (no sweep) | %d | %d | %ld | %.2f |\n", trials, concurrent, plain.reports,
              plain.seconds / plain.reports * 1e6);
  std::printf("| head, sweep under ASHA | %d | %d | %ld | %.2f |\n", trials, concurrent, swept.reports,
              swept.seconds / swept.reports * 1e6);
  return 0;
}
