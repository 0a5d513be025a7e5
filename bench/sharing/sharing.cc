#include "sharing.h"

#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "ckpt_jobs.h"
#include "common/logging.h"
#include "preemption_trial.h"
#include "sim_cluster.h"
#include "stats.h"

namespace clusterd::bench {

void RunPreemption(const SharingOptions& options, Report* report) {
  std::string why;
  if (!testing::SimNetwork::Available(&why)) {
    report->Failed("machines", why);
    return;
  }
  std::unique_ptr<SimCluster> cluster;
  try {
    cluster = std::make_unique<SimCluster>(std::vector<std::string>{"w1", "w2"});
  } catch (const std::exception& e) {
    report->Failed("machines", e.what());
    return;
  }
  std::string error;
  if (!cluster->Start(&error, {"--num-cpus", "1"}) || !MakeJobFolder(*cluster, CKPT_RANK_BIN, &error)) {
    report->Failed("cluster", error);
    return;
  }
  // Kinds interleaved per trial, so that a slow spell of the shared machine hits them alike.
  Samples idle, on_notice, ignoring, stubborn;
  double lost_on_notice = 0, lost_ignoring = 0;
  for (int trial = 0; trial < options.trials; ++trial) {
    for (const std::string kind : {"", "on-notice", "ignore", "stubborn"}) {
      PreemptionSetup setup;
      setup.victim = kind;
      setup.grace_s = options.grace_s;
      PreemptionTrial t;
      std::string what = fmt::format("preemption ({}), trial {}", kind.empty() ? "idle cluster" : kind, trial);
      if (!RunPreemptionTrial(*cluster, setup, trial, &t, &error)) {
        report->Failed(what, error);
        return;
      }
      std::cerr << fmt::format("sharing_bench: {}: submit -> running {:.0f} ms, epochs lost {:.2f}\n", what,
                               t.submit_to_running_ms, t.epochs_lost);
      if (kind.empty()) idle.Add(t.submit_to_running_ms);
      if (kind == "on-notice") on_notice.Add(t.submit_to_running_ms), lost_on_notice = std::max(lost_on_notice, t.epochs_lost);
      if (kind == "ignore") ignoring.Add(t.submit_to_running_ms), lost_ignoring = std::max(lost_ignoring, t.epochs_lost);
      if (kind == "stubborn") stubborn.Add(t.submit_to_running_ms);
    }
  }
  const double grace_ms = options.grace_s * 1000.0;
  const std::string idle_what = "the same job on an idle cluster (median)";
  report->Check("high-priority submit -> ranks running, victim checkpoints on notice and exits (median ms)",
                on_notice.Median(), "ms", grace_ms + 500, idle.Median(), idle_what);
  report->Check("the same, victim ignores the notice, SIGTERM ends it (median ms)", ignoring.Median(), "ms",
                grace_ms + 500, idle.Median(), idle_what);
  report->Check(fmt::format("the same, victim ignores SIGTERM too, SIGKILL after its {} s grace (worst ms)",
                            options.grace_s),
                stubborn.Max(), "ms", grace_ms + 500, idle.Median(), idle_what);
  report->Check("epochs the victim re-runs, checkpointing on notice (worst)", lost_on_notice, "", 0.001, std::nullopt,
                "");
  report->Check("epochs the victim re-runs, ignoring the notice (worst)", lost_ignoring, "", 1.0001, std::nullopt, "");
}

void RunSchedulerCost(const SharingOptions& options, Report* report) {
  SetLogLevel(LogLevel::kError);
  const SchedulerCostOptions& o = options.scheduler;
  std::cerr << fmt::format("sharing_bench: scheduler, {} pending jobs from {} users on {} nodes, {} decisions\n",
                           o.pending, o.users, o.nodes, o.decisions);
  SchedulerCost fifo = MeasureSchedulerCost(o, false);
  SchedulerCost mixed = MeasureSchedulerCost(o, true);
  if (!fifo.measured || !mixed.measured) {
    report->Failed("scheduler", fifo.error.empty() ? mixed.error : fifo.error);
    return;
  }
  const std::string fifo_what = "one user, one priority (FIFO)";
  report->Check(fmt::format("scheduler, per decision: {} pending from {} users at 4 priorities, {} nodes (median ms)",
                            o.pending, o.users, o.nodes),
                mixed.median_ms, "ms", 1.0, fifo.median_ms, fifo_what);
  report->Check("the same, p99 (ms)", mixed.p99_ms, "ms", 1.0, fifo.p99_ms, fifo_what);
  report->Info("jobs started by the timed decisions", mixed.placed, "", fifo.placed, fifo_what);
}

}  // namespace clusterd::bench
