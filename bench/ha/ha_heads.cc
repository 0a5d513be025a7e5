#include "ha_heads.h"

#include <iostream>
#include <memory>
#include <stdexcept>

#include <fmt/format.h>

#include "ha_machines.h"

namespace clusterd::bench {

using namespace std::chrono_literals;

bool RunHaHeadsTrials(int trials, const std::string& noop_rank, std::chrono::milliseconds limit,
                      std::vector<FailoverTimes>* out, std::string* error) {
  std::unique_ptr<testing::HaMachines> ha;
  try {
    std::string skip_reason;
    ha = testing::HaMachines::Start(&skip_reason);
    if (!ha) {
      *error = "cannot run here: " + skip_reason;
      return false;
    }
  } catch (const std::exception& e) {
    *error = std::string("the cluster did not start: ") + e.what();
    return false;
  }

  int dead = -1;  // the head whose machine the trial killed
  FailoverTarget target;
  target.ctl = [&](const std::vector<std::string>& args, std::chrono::milliseconds timeout) {
    std::string line;
    for (const std::string& arg : args) line += (line.empty() ? "" : " ") + arg;
    return ha->Ctl(line, timeout);
  };
  target.client = &ha->client();
  target.workers = ha->workers();
  target.kill = [&] { ha->KillMachine(ha->head(dead)); };
  target.recover = [&](std::string* why) {
    try {
      ha->StartHead(dead);
    } catch (const std::exception& e) {
      *why = std::string("the killed head did not start again: ") + e.what();
      return false;
    }
    if (!testing::WaitFor([&] { return ha->Leader().head >= 0 && ha->WorkersAlive(); }, 30s, 100ms)) {
      *why = "after the killed head's restart, no leader with every worker ALIVE within 30 s";
      return false;
    }
    return true;
  };
  if (!InstallRankProgram(target, noop_rank, error)) return false;
  if (!testing::WaitFor([&] { return ha->WorkersAlive(); }, 30s, 100ms)) {
    *error = "not every worker ALIVE on the leader within 30 s of the start";
    return false;
  }
  for (int i = 0; i < trials; ++i) {
    testing::HaLeader leader = ha->Leader();
    if (leader.head < 0) {
      *error = fmt::format("trial {}: no head answers as the leader", i);
      return false;
    }
    dead = leader.head;
    FailoverTimes times;
    if (!RunFailoverTrial(target, fmt::format("ha-{}", i), limit, &times, error)) {
      *error += "\n" + ha->HeadLogTail(1 - dead);
      return false;
    }
    std::cerr << fmt::format("HA heads, trial {} ({} killed): answering {:.0f} ms, registered {:.0f} ms, "
                             "ranks {:.0f} ms ({} submit tries)",
                             i, ha->head_id(dead), times.answering_ms, times.registered_ms, times.ranks_ms,
                             times.submit_tries)
              << std::endl;
    out->push_back(times);
  }
  return true;
}

}  // namespace clusterd::bench
