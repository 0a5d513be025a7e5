// The cluster the parts run on: a head and workers w1, w2 on loopback,
// each with `cpus` CPUs, or a head that runs no agent and workers w0, w1,
// w2 (as heads in HA run), started through the integration tests' harness.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "harness.h"

namespace clusterd::bench {

struct ThreeNodes {
  testing::Cluster cluster;  // stops and removes everything when destroyed
  pid_t head_pid = 0;
  std::vector<pid_t> daemon_pids;  // the head, w1, w2 (w0 first when the head runs no agent)
  std::string token;
};

// How the head starts: its own flags beside the nodes' (a head in HA's
// --ha and --store), and whether it is one of the three nodes.
struct HeadChoice {
  std::vector<std::string> flags;
  bool runs_agent = true;
};

// Starts the daemons and waits until the head lists three nodes ALIVE;
// false with the reason in *error otherwise.
bool StartThreeNodes(int cpus, const HeadChoice& head, ThreeNodes* nodes, std::string* error);

}  // namespace clusterd::bench
