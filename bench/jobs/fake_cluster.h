// A HeadCore in-process with fake nodes, for the benchmarks that time the
// head's own work without processes or sockets: fake clock, in-memory
// journal, recording agent connections, and a driver that plays the
// agents' part (every rank starts and exits 0).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "daemon/head/head_core.h"
#include "tests/unit/fake_agent_connection.h"

namespace clusterd::bench {

// One rank of `cpus` CPUs (and `gpus` GPUs) running /bin/true in a shared folder.
JobSpec OneRank(double cpus, double gpus);

struct FakeCluster {
  FakeCluster() = default;
  explicit FakeCluster(const Config& tuned) : config(tuned) {}

  FakeClock clock;
  MemoryJobStore store, sweep_store;
  LogStore logs{""};
  Config config;
  HeadCore head{&clock, config, &store, &logs, nullptr, &sweep_store};
  std::vector<std::shared_ptr<testing::FakeAgentConnection>> links;
  std::vector<size_t> answered;  // per link: messages the driver has looked at

  // Registers nodes PREFIX-0 .. PREFIX-(count-1) of 2 CPUs at 10.SUBNET.x.y;
  // returns the seconds it took.
  double Register(int count, const std::string& prefix = "n", int subnet = 0);
  // Plays the agents' part for whatever the head sent since the last call:
  // a port for each reservation, each launched rank started and exited 0.
  // The ids of the jobs launched go to *placed (may be null).
  void AnswerAgents(std::vector<std::string>* placed);
};

}  // namespace clusterd::bench
