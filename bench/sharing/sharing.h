// sharing_bench's sections (main.cc says what each measures).
#pragma once

#include "report.h"
#include "scheduler_cost.h"

namespace clusterd::bench {

struct SharingOptions {
  int trials = 3;   // preemption trials of each kind
  int grace_s = 2;  // the victims' preemption_grace_s
  SchedulerCostOptions scheduler;
};

void RunPreemption(const SharingOptions& options, Report* report);
void RunSchedulerCost(const SharingOptions& options, Report* report);

}  // namespace clusterd::bench
