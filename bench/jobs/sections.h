// The jobs benchmark's two parts; each starts its own loopback cluster in a
// fresh temp dir, adds rows to the report, and returns false (after noting
// why in the report) only when it could not measure.
#pragma once

#include <string>
#include <vector>

#include "report.h"

namespace clusterd::bench {

struct JobsOptions {
  std::vector<int> rank_counts = {1, 4, 16};
  int trials = 12;           // per rank count, after one warm-up trial
  int torchrun_trials = 10;  // per rank count, no warm-up
  int cpus_per_node = 6;     // head + 2 workers: 18 single-CPU slots
  int jobs = 10000;
  int submit_threads = 8;    // unary SubmitJob calls in flight at once
  int drain_limit_s = 240;   // give up waiting for the queue after this
  std::string placement = "SPREAD";
  std::string python = "/usr/bin/python3";
};

// 1. SubmitJob -> every rank's process started, ours against torchrun.
bool RunLatency(const JobsOptions& options, Report* report);
// 2. 10,000 queued single-rank jobs through a 3-node cluster, against a
//    fork/exec loop of the same processes.
bool RunThroughput(const JobsOptions& options, Report* report);
// 3. The same jobs through a head in HA (--ha on three etcd members, --store
//    on a radosgw) against a single head in the same run.
bool RunThroughputHa(const JobsOptions& options, Report* report);
}  // namespace clusterd::bench
