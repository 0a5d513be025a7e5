// The cluster both parts run on: a head and workers w1, w2 on loopback,
// each with `cpus` CPUs, started through the integration tests' harness.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "harness.h"

namespace clusterd::bench {

struct ThreeNodes {
  testing::Cluster cluster;  // stops and removes everything when destroyed
  pid_t head_pid = 0;
  std::vector<pid_t> daemon_pids;  // the head, w1, w2
  std::string token;
};

// Starts the three daemons, the head with `head_flags` too (a head in HA's
// --ha and --store), and waits until the head lists all three ALIVE; false
// with the reason in *error otherwise.
bool StartThreeNodes(int cpus, const std::vector<std::string>& head_flags, ThreeNodes* nodes, std::string* error);

}  // namespace clusterd::bench
