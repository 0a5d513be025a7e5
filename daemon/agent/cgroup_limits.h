// What a job asks for becomes a limit on each node: a rank's memory
// (resources_per_worker's memory) is the memory limit of a cgroup of its
// own, its CPUs a CPU weight (or quota), and an attempt's processes are
// capped by the node's attempt_pids_max. A rank over its memory is killed
// by the kernel, and its cgroup's oom_kill count says so.
//
// Per rank, not per attempt, for memory and CPU: a job asks for memory
// per worker, and one rank that leaks must be the one killed (and named),
// not a neighbour of its attempt that happened to allocate last. The pids
// limit is the attempt's: it guards the node's process table, not a share.
//
// Each limit comes from cgroup v2 where this node's agent has a delegated
// subtree with that controller (a systemd unit with Delegate=yes, or root
// on a v2 host), else from the cgroup v1 hierarchy of that controller
// (memory, pids, cpu), else it does not hold here and the node says so
// (its clusterd.limits label).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace clusterd {

// Where one controller's cgroups are made on this node ("": nowhere).
struct LimitController {
  std::string root;
  bool v2 = false;
  bool present() const { return !root.empty(); }
};

// The node's settings for them (the config's cpu_limit and attempt_pids_max).
struct LimitSettings {
  std::string cpu_limit = "weight";  // weight, quota or none
  int64_t attempt_pids_max = 0;      // 0: none
};

// A bad cpu_limit or attempt_pids_max, named.
Status CheckLimitSettings(const LimitSettings& settings);

struct LimitControllers {
  LimitController memory, pids, cpu;
  LimitSettings settings;
  // Which limits do not hold here, and why ("" when all do): logged once at start.
  std::string why_not;

  // Finds each controller. `v2_root` is the attempts' cgroup v2 folder
  // (Containment's root, "" when not v2): a controller it can enable for
  // its children is used there; else the v1 hierarchy of the controller,
  // in a folder `name` made below this process's own cgroup there.
  static LimitControllers Find(const std::string& v2_root, const std::string& name, const LimitSettings& settings);
  // "memory, cpu weight, pids 32768" (what holds), or "none": the node's
  // clusterd.limits label.
  std::string Describe() const;
  bool any() const { return memory.present() || pids.present() || cpu.present(); }
  // Removes the v1 folders Find made (once their attempts' are gone).
  void RemoveRoots() const;
};

// What one rank holds to (0: no limit of that kind).
struct RankLimits {
  int64_t memory_bytes = 0;
  double cpus = 0;
};

// The files that set `limits` in a rank's cgroup, and what each gets,
// in the order they must be written (v1's memsw after its memory limit).
struct CgroupWrite {
  std::string file;
  std::string value;
  bool optional = false;  // a file some kernels lack (swap accounting): skipped where absent
};
std::vector<CgroupWrite> MemoryLimitWrites(int64_t bytes, bool v2);
std::vector<CgroupWrite> CpuLimitWrites(double cpus, bool v2, const std::string& cpu_limit);
std::vector<CgroupWrite> PidsLimitWrites(int64_t pids_max);
// A CPU weight counts among its cgroup's siblings only, so an attempt's
// folder weighs what its ranks on the node weigh together (`rank_weights`,
// each as CpuLimitWrites wrote it): an attempt of 8 CPUs then gets 8 times
// the time of an attempt of 1 beside it, whatever their ranks.
std::vector<CgroupWrite> AttemptWeightWrites(const std::vector<int64_t>& rank_weights, bool v2);
// `cpus` CPUs as a cgroup's CPU weight (v2's cpu.weight, v1's cpu.shares).
int64_t CpuWeight(double cpus, bool v2);
// The file that holds a cgroup's CPU weight.
const char* CpuWeightFile(bool v2);

// The kernel's count of processes it killed in the cgroup at `folder` for
// its memory limit: v2 memory.events' oom_kill, v1 memory.oom_control's
// oom_kill. 0 when unknown.
int64_t OomKills(const std::string& folder, bool v2);

}  // namespace clusterd
