// The scheduler's cost per decision with a long, mixed queue: a HeadCore
// in-process (bench/jobs' FakeCluster: fake clock, in-memory journal, fake
// agents) with every CPU of `nodes` nodes taken and `pending` jobs waiting.
// A decision is one running rank exiting: its job ends, and the head picks
// what starts next by priority, fair share among the users and age, and
// places it. Only the head's handling of that exit is timed. The baseline,
// in the same run, is the same queue from one user at one priority: the
// strict FIFO the head had before priorities. The fake agents end a rank
// the moment the head sends it SIGTERM, so that a preemption a decision
// begins ends at its deadline (the clock moves 1 s per decision).
#pragma once

#include <string>

namespace clusterd::bench {

struct SchedulerCostOptions {
  int nodes = 1000;
  int pending = 10000;
  int users = 100;
  int decisions = 2000;
};

struct SchedulerCost {
  bool measured = false;
  std::string error;
  double median_ms = 0;
  double p99_ms = 0;
  int placed = 0;  // jobs started during the decisions (by them, or by the preemptions they began)
};

// mixed: the pending jobs come from options.users users at four
// priorities; else from one user at priority 0.
SchedulerCost MeasureSchedulerCost(const SchedulerCostOptions& options, bool mixed);

}  // namespace clusterd::bench
