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

#include "chaos_cluster.h"
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
  testing::Machine* machine = nullptr;  // null: the serving head (head_kill)
  int64_t restore_at_ms = 0;
  size_t window = 0;
};

class Chaos {
 public:
  Chaos(const ChaosOptions& options, ChaosCluster& cluster, ChaosResult* result)
      : o_(options), c_(cluster), r_(result), rng_(options.seed), mark_(fmt::format("CHAOS_MARK=chaos-{}", options.seed)) {}
  ~Chaos() {
    // Never leave a machine stopped or unplugged behind, whatever happened.
    for (const OpenFault& f : open_) {
      if (f.kind == "agent_stop" && f.machine) {
        if (auto pid = ClusterdPid(*f.machine)) kill(*pid, SIGCONT);
      }
      if (IsLinkCut(f.kind) && f.machine) f.machine->RestoreLink();
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
  bool InjectControlPlaneFault(const std::string& kind, int64_t now);
  void RestoreControlPlane(const OpenFault& fault);
  // link_cut (a worker's), head_link_cut, etcd_link_cut.
  static bool IsLinkCut(const std::string& kind) {
    return kind.size() >= 8 && kind.compare(kind.size() - 8, 8, "link_cut") == 0;
  }
  // Faults on the heads' side in HA (heads, etcd members): one at a time,
  // so that a quorum and a head to lead are always there.
  static bool IsControlPlane(const std::string& kind) {
    return kind == "head_kill" || kind == "head_machine_kill" || kind == "etcd_kill" || kind == "head_link_cut" ||
           kind == "etcd_link_cut";
  }
  bool ControlPlaneFaultOpen() const {
    for (const OpenFault& f : open_) {
      if (IsControlPlane(f.kind)) return true;
    }
    return false;
  }
  // In HA, while a fault on the heads' side is open and for a while after
  // (a failover, a head finding the leader again), a call may be refused:
  // clusterctl then failed, it was not acknowledged, and the run goes on.
  bool ServiceMayBeOut() const {
    return c_.ha() && (ControlPlaneFaultOpen() || UnixMs() < control_plane_settled_ms_);
  }
  void Restore(const OpenFault& fault);
  bool RestartHead(const std::string& why);
  bool RestartAgent(testing::Machine& worker);
  void TouchForNode(const std::string& node, const std::string& what);
  testing::Machine* FreeWorker();
  // The workers' names but those a fault holds now (they come back when it
  // is undone, not before).
  std::vector<std::string> WorkersWithoutFault() const;
  bool Busy(const testing::Machine* m) const {
    for (const OpenFault& f : open_) {
      if (f.machine == m) return true;
    }
    return false;
  }
  std::map<std::string, std::string> Snapshot(const ListJobsReply& list);
  void CompareReplay(const std::string& how);

  const ChaosOptions& o_;
  ChaosCluster& c_;
  ChaosResult* r_;
  Rng rng_;
  const std::string mark_;
  int64_t start_ms_ = UnixMs();
  std::vector<ChaosJob> jobs_;
  std::map<std::string, JobInfo> seen_;  // the latest listing, by id
  std::vector<NodeWindow> windows_;
  std::vector<OpenFault> open_;
  std::vector<std::string> round_;  // fault kinds still due in this round
  bool head_down_ = false;  // the single head is down: nothing is submitted or checked
  std::map<std::string, pid_t> head_pids_;  // by head machine
  int64_t control_plane_settled_ms_ = 0;    // HA: calls may fail until then
  std::map<std::string, pid_t> agent_pids_;
  int file_serial_ = 0;
  std::set<std::string> list_errors_;
};

}  // namespace clusterd::bench
