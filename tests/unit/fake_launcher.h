// A Launcher with no processes, for driving the rank runner in unit tests:
// spawns get made-up pids, signals are recorded, and a test says when a
// "process" exits.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "daemon/agent/launcher.h"

namespace clusterd::testing {

class FakeLauncher : public Launcher {
 public:
  Result<pid_t> Spawn(const SpawnRequest& request) override {
    if (!fail_with.empty()) return Status::FailedPrecondition(fail_with);
    pid_t pid = next_pid++;
    spawned.emplace_back(pid, request);
    return pid;
  }
  void SignalGroup(pid_t pid, int signal_number) override { signals.emplace_back(pid, signal_number); }
  std::vector<ChildExit> Reap() override {
    std::vector<ChildExit> out;
    out.swap(exited);
    return out;
  }
  pid_t GroupOf(pid_t pid) override {
    auto it = groups.find(pid);
    return it == groups.end() ? -1 : it->second;
  }
  int KillDescendants() override { return 0; }
  int KillLeftovers(const std::string& job_id, int attempt) override {
    leftovers_killed.emplace_back(job_id, attempt);
    return 0;
  }

  // The "process" pid has ended; the next Reap() says so.
  void Exit(pid_t pid, int exit_code, int signal_number = 0) { exited.push_back({pid, exit_code, signal_number}); }
  int SignalsTo(pid_t pid, int signal_number) const {
    int n = 0;
    for (const auto& [to, sig] : signals) n += to == pid && sig == signal_number;
    return n;
  }

  std::string fail_with;  // non-empty: every Spawn fails with it
  pid_t next_pid = 1000;
  std::vector<std::pair<pid_t, SpawnRequest>> spawned;
  std::vector<std::pair<pid_t, int>> signals;
  std::vector<ChildExit> exited;
  std::map<pid_t, pid_t> groups;  // pid -> its process group
  std::vector<std::pair<std::string, int>> leftovers_killed;  // (job, attempt) of each KillLeftovers
};

}  // namespace clusterd::testing
