// The chaos run's machinery, shared by its two halves: chaos_run.cc (the
// loop that submits jobs and injects and undoes faults) and chaos_checks.cc
// (what is checked once it drained). Internal to bench/chaos.
#pragma once

#include <signal.h>

#include <climits>
#include <cstdint>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "chaos_run.h"
#include "proc_marks.h"

namespace clusterd::bench {

// Wall-clock milliseconds: fault windows are compared with job times.
inline int64_t UnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A fault on a worker, from its start to when the worker was back (ALIVE).
struct NodeWindow {
  std::string node, kind;
  int64_t start_ms = 0, end_ms = INT64_MAX;
};

struct OpenFault {
  std::string kind;
  testing::Machine* machine = nullptr;  // null: the head
  int64_t restore_at_ms = 0;
  size_t window = 0;
};

class Chaos {
 public:
  Chaos(const ChaosOptions& options, SimCluster& cluster, ChaosResult* result)
      : o_(options), c_(cluster), r_(result), rng_(options.seed), mark_(fmt::format("CHAOS_MARK=chaos-{}", options.seed)) {}
  ~Chaos() {
    // Never leave a machine stopped or unplugged behind, whatever happened.
    for (const OpenFault& f : open_) {
      if (f.kind == "agent_stop" && f.machine) {
        if (auto pid = ClusterdPid(*f.machine)) kill(*pid, SIGCONT);
      }
      if (f.kind == "link_cut" && f.machine) f.machine->RestoreLink();
    }
  }

  bool Setup();
  void Loop();
  void Drain();
  void Check();

 private:
  void Note(const std::string& line) {
    std::cerr << fmt::format("[{:6.1f}s] {}", (UnixMs() - start_ms_) / 1000.0, line) << std::endl;
  }
  void Finding(const std::string& line) {
    r_->findings.push_back(line);
    Note("FINDING: " + line);
  }
  int Uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }

  std::optional<ListJobsReply> ListJobs();
  void Poll();
  void SubmitOne();
  void SubmitKind(JobKind kind);
  void SendStops(bool all);
  void Health();
  bool InjectFault(const std::string& kind);
  void Restore(const OpenFault& fault);
  bool RestartHead(const std::string& why);
  bool RestartAgent(testing::Machine& worker);
  void TouchForNode(const std::string& node, const std::string& what);
  testing::Machine* FreeWorker();
  bool Busy(const testing::Machine* m) const {
    for (const OpenFault& f : open_) {
      if (f.machine == m) return true;
    }
    return false;
  }
  std::map<std::string, std::string> Snapshot(const ListJobsReply& list);
  void CompareReplay(const std::string& how);

  const ChaosOptions& o_;
  SimCluster& c_;
  ChaosResult* r_;
  Rng rng_;
  const std::string mark_;
  int64_t start_ms_ = UnixMs();
  std::vector<ChaosJob> jobs_;
  std::map<std::string, JobInfo> seen_;  // the latest listing, by id
  std::vector<NodeWindow> windows_;
  std::vector<OpenFault> open_;
  std::vector<std::string> round_;  // fault kinds still due in this round
  bool head_down_ = false;
  std::optional<pid_t> head_pid_;
  std::map<std::string, pid_t> agent_pids_;
  int file_serial_ = 0;
  std::set<std::string> list_errors_;
};

}  // namespace clusterd::bench
