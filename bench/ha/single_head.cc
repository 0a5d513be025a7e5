#include "single_head.h"

#include <iostream>
#include <thread>

#include <fmt/format.h>

#include "sim_cluster.h"

namespace clusterd::bench {

using namespace std::chrono_literals;

bool RunSingleHeadTrials(int trials, const std::string& noop_rank, std::chrono::milliseconds limit,
                         std::vector<FailoverTimes>* out, std::string* error) {
  SimCluster cluster({"w1", "w2", "w3"});
  if (!cluster.Start(error)) return false;
  std::vector<std::string> names;
  for (testing::Machine* w : cluster.workers) names.push_back(w->name());

  std::thread restart;
  testing::RunResult restarted;
  FailoverTarget target;
  target.ctl = [&](const std::vector<std::string>& args, std::chrono::milliseconds timeout) {
    return cluster.Ctl(args, timeout);
  };
  target.client = &cluster.client;
  target.workers = cluster.workers;
  target.kill = [&] {
    cluster.head.KillAll();
    restart = std::thread(
        [&] { restarted = cluster.head.Run({"clusterd", "start", "--head", "--num-cpus", "0", "--num-gpus", "0"}); });
  };
  target.recover = [&](std::string* why) {
    if (restart.joinable()) restart.join();
    if (restarted.exit_code != 0) {
      *why = "the head did not restart: " + restarted.err + restarted.out;
      return false;
    }
    if (!cluster.WaitAlive(names, 30s)) {
      *why = "after the head's restart, not every worker ALIVE within 30 s";
      return false;
    }
    return true;
  };
  if (!InstallRankProgram(target, noop_rank, error)) return false;
  for (int i = 0; i < trials; ++i) {
    FailoverTimes times;
    if (!RunFailoverTrial(target, fmt::format("single-{}", i), limit, &times, error)) {
      if (restart.joinable()) restart.join();
      return false;
    }
    std::cerr << fmt::format("single head, trial {}: answering {:.0f} ms, registered {:.0f} ms, ranks {:.0f} ms "
                             "({} submit tries)",
                             i, times.answering_ms, times.registered_ms, times.ranks_ms, times.submit_tries)
              << std::endl;
    out->push_back(times);
  }
  return true;
}

}  // namespace clusterd::bench
