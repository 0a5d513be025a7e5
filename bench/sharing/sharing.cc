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
  int64_t lost_on_notice = 0, lost_ignoring = 0, lost_stubborn = 0;
  const int epoch_steps = PreemptionSetup{}.epoch_steps;
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
      std::cerr << fmt::format("sharing_bench: {}: submit -> running {:.0f} ms, steps re-run {}", what,
                               t.submit_to_running_ms, t.steps_lost);
      if (!kind.empty()) {
        std::cerr << fmt::format(" (notice {:.0f} ms, deadline {:.0f} ms, victim down {:.0f} ms, its attempt ended "
                                 "in the head {:.0f} ms, placed {:.0f} ms)",
                                 t.noticed_ms, t.deadline_ms, t.victim_down_ms, t.victim_ended_ms, t.placed_ms);
      }
      std::cerr << "\n";
      if (kind.empty()) idle.Add(t.submit_to_running_ms);
      if (kind == "on-notice") on_notice.Add(t.submit_to_running_ms), lost_on_notice = std::max(lost_on_notice, t.steps_lost);
      if (kind == "ignore") ignoring.Add(t.submit_to_running_ms), lost_ignoring = std::max(lost_ignoring, t.steps_lost);
      if (kind == "stubborn") stubborn.Add(t.submit_to_running_ms), lost_stubborn = std::max(lost_stubborn, t.steps_lost);
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
  // Targets: no work lost when it checkpoints on notice, at most one epoch when it does not.
  report->Check(fmt::format("steps the victim re-runs, checkpointing on notice (worst; an epoch is {} steps)", epoch_steps),
                static_cast<double>(lost_on_notice), "", 1, std::nullopt, "");
  report->Check("the same, ignoring the notice (worst)", static_cast<double>(lost_ignoring), "", epoch_steps + 1,
                static_cast<double>(epoch_steps), "one epoch");
  report->Info("the same, ignoring SIGTERM too (worst)", static_cast<double>(lost_stubborn), "",
               static_cast<double>(epoch_steps), "one epoch");
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
  report->Info("jobs started during the decisions", mixed.placed, "", fifo.placed, fifo_what);
}

}  // namespace clusterd::bench
