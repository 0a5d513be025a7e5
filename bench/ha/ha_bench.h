// The ha benchmark: the time from the serving head's machine dying to (a)
// a head answering `clusterctl status`, (b) every worker registered with
// it, (c) a job submitted at once having all its ranks running
// (failover_trial.h), for two HA heads on three etcd members (ha_heads.h)
// against a single head restarted on its machine (single_head.h), each
// over several trials: median and max.
#pragma once

#include <set>
#include <string>

#include "report.h"

namespace clusterd::bench {

struct HaBenchOptions {
  int trials = 5;
  int limit_s = 60;  // per trial, for each clock
  std::set<std::string> parts = {"single", "ha"};
  std::string noop_rank;
};

void RunHaBench(const HaBenchOptions& options, Report* report);

}  // namespace clusterd::bench
