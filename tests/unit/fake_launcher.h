// A Launcher with no processes, for driving the rank runner in unit tests:
// spawns get made-up pids, signals are recorded, and a test says what a
// "process" prints (into the real pipe the runner gave it) and when it exits.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <map>
#include <stdexcept>
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
    SpawnRequest kept = request;
    // As a process would, it holds its own copy of its output pipe until it exits.
    if (request.output_fd >= 0) kept.output_fd = fcntl(request.output_fd, F_DUPFD_CLOEXEC, 0);
    spawned.emplace_back(pid, kept);
    return pid;
  }
  std::vector<Result<pid_t>> SpawnAll(const std::vector<SpawnRequest>& requests) override {
    batches.push_back(requests.size());
    return Launcher::SpawnAll(requests);
  }
  ~FakeLauncher() override {
    for (auto& [pid, request] : spawned) CloseOutput(request);
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
  pid_t ParentOf(pid_t pid) override {
    auto it = parents.find(pid);
    return it == parents.end() ? 0 : it->second;
  }
  int KillDescendants() override { return 0; }
  bool MayHaveLeftovers() override { return may_have_leftovers; }
  int KillLeftovers(const std::string& job_id, int attempt) override {
    leftovers_killed.emplace_back(job_id, attempt);
    return 0;
  }

  // The "process" pid writes text to its stdout.
  void Print(pid_t pid, const std::string& text) {
    for (auto& [spawned_pid, request] : spawned) {
      if (spawned_pid == pid && request.output_fd >= 0) {
        if (write(request.output_fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
          throw std::runtime_error("the rank's pipe took less than was printed");
        }
      }
    }
  }
  // The "process" pid has ended (its output pipe closes); the next Reap() says so.
  void Exit(pid_t pid, int exit_code, int signal_number = 0) {
    for (auto& [spawned_pid, request] : spawned) {
      if (spawned_pid == pid) CloseOutput(request);
    }
    exited.push_back({pid, exit_code, signal_number});
  }
  int SignalsTo(pid_t pid, int signal_number) const {
    int n = 0;
    for (const auto& [to, sig] : signals) n += to == pid && sig == signal_number;
    return n;
  }

  static void CloseOutput(SpawnRequest& request) {
    if (request.output_fd >= 0) close(request.output_fd);
    request.output_fd = -1;
  }

  std::string fail_with;  // non-empty: every Spawn fails with it
  pid_t next_pid = 1000;
  std::vector<std::pair<pid_t, SpawnRequest>> spawned;
  std::vector<size_t> batches;  // the size of each SpawnAll
  std::vector<std::pair<pid_t, int>> signals;
  std::vector<ChildExit> exited;
  std::map<pid_t, pid_t> groups;  // pid -> its process group
  std::map<pid_t, pid_t> parents;  // pid -> its parent
  std::vector<std::pair<std::string, int>> leftovers_killed;  // (job, attempt) of each KillLeftovers
  bool may_have_leftovers = true;
};

}  // namespace clusterd::testing
