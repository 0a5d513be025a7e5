#include "daemon/agent/cgroup_limits.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <sstream>
#include <vector>

#include <fmt/format.h>

#include "common/file_util.h"
#include "daemon/agent/cgroup_fs.h"

namespace clusterd {

namespace {

// cgroup v2's CPU period, and v1's cfs_period_us: a quota is a share of it.
constexpr int64_t kCpuPeriodUs = 100'000;

std::string ParentOf(const std::string& path) { return path.substr(0, path.rfind('/')); }

// Under cgroup v2 a cgroup with processes in it cannot pass controllers on
// to its children ("no internal processes"). A systemd unit with
// Delegate=yes starts the daemon in the unit's own cgroup, so the daemon
// moves itself into a leaf of that cgroup ("clusterd-PID.self"), as
// systemd's delegation rules ask, when it is the cgroup's only process.
// Others there (a shell that started it by hand) are not ours to move.
bool MoveSelfToLeaf(const std::string& cgroup, std::string* why) {
  std::istringstream procs(ReadWholeFile(cgroup + "/cgroup.procs").value_or(""));
  std::vector<int> members;
  for (int pid; procs >> pid;) members.push_back(pid);
  if (members.size() != 1 || members[0] != getpid()) {
    *why = fmt::format("{} holds {} processes besides this daemon, so it cannot hand controllers to cgroups below it",
                       cgroup, members.size() - (std::count(members.begin(), members.end(), getpid()) ? 1 : 0));
    return false;
  }
  const std::string leaf = fmt::format("{}/clusterd-{}.self", cgroup, getpid());
  if ((mkdir(leaf.c_str(), 0755) != 0 && errno != EEXIST) ||
      !WriteCgroupFile(leaf + "/cgroup.procs", fmt::format("{}\n", getpid()))) {
    *why = fmt::format("cannot move this daemon into {}: {}", leaf, std::strerror(errno));
    return false;
  }
  return true;
}

// Enables `controller` for the children of `v2_root` (the attempts'
// cgroups), first in its parent (this daemon's own cgroup) where needed.
bool EnableV2(const std::string& v2_root, const std::string& controller, std::string* why) {
  const std::string parent = ParentOf(v2_root);
  if (!HasWord(ReadWholeFile(parent + "/cgroup.controllers").value_or(""), controller)) {
    *why = fmt::format("the cgroup v2 hierarchy gives {} no {} controller", parent, controller);
    return false;
  }
  if (!HasWord(ReadWholeFile(parent + "/cgroup.subtree_control").value_or(""), controller)) {
    const std::string control = parent + "/cgroup.subtree_control";
    bool enabled = WriteCgroupFile(control, "+" + controller);
    if (!enabled && errno == EBUSY && MoveSelfToLeaf(parent, why)) enabled = WriteCgroupFile(control, "+" + controller);
    if (!enabled) {
      if (why->empty()) *why = fmt::format("cannot enable {} in {}: {}", controller, control, std::strerror(errno));
      return false;
    }
  }
  if (!WriteCgroupFile(v2_root + "/cgroup.subtree_control", "+" + controller)) {
    *why = fmt::format("cannot enable {} in {}/cgroup.subtree_control: {}", controller, v2_root, std::strerror(errno));
    return false;
  }
  return true;
}

LimitController FindOne(const std::vector<CgroupMount>& mounts, const std::string& v2_root, const std::string& name,
                        const std::string& controller, std::vector<std::string>* why_not) {
  LimitController out;
  std::string why_v2;
  if (!v2_root.empty() && EnableV2(v2_root, controller, &why_v2)) {
    out.root = v2_root;
    out.v2 = true;
    return out;
  }
  if (const CgroupMount* mount = V1MountOf(mounts, controller)) {
    auto made = MakeCgroupBelow(mount->point, OwnCgroup(controller), name);
    if (made.ok()) {
      out.root = *made;
      return out;
    }
    why_not->push_back(fmt::format("{}: {}", controller, made.status().message()));
    return out;
  }
  why_not->push_back(fmt::format("{}: {}", controller,
                                 why_v2.empty() ? "no cgroup v2 subtree and no v1 hierarchy of it" : why_v2));
  return out;
}

std::string Version(const LimitController& controller) { return controller.v2 ? "cgroup v2" : "cgroup v1"; }

}  // namespace

Status CheckLimitSettings(const LimitSettings& settings) {
  if (settings.cpu_limit != "weight" && settings.cpu_limit != "quota" && settings.cpu_limit != "none") {
    return Status::InvalidArgument(
        fmt::format("--cpu-limit: expected weight, quota or none, got '{}'", settings.cpu_limit));
  }
  if (settings.attempt_pids_max < 0) {
    return Status::InvalidArgument(
        fmt::format("--attempt-pids-max: expected 0 (no limit) or more, got {}", settings.attempt_pids_max));
  }
  return Status::Ok();
}

LimitControllers LimitControllers::Find(const std::string& v2_root, const std::string& name,
                                        const LimitSettings& settings) {
  LimitControllers out;
  out.settings = settings;
  const std::vector<CgroupMount> mounts = CgroupMounts();
  std::vector<std::string> why;
  out.memory = FindOne(mounts, v2_root, name, "memory", &why);
  if (settings.cpu_limit != "none") out.cpu = FindOne(mounts, v2_root, name, "cpu", &why);
  if (settings.attempt_pids_max > 0) out.pids = FindOne(mounts, v2_root, name, "pids", &why);
  out.why_not = fmt::format("{}", fmt::join(why, "; "));
  return out;
}

std::string LimitControllers::Describe() const {
  std::vector<std::string> holding;
  if (memory.present()) holding.push_back(fmt::format("memory ({})", Version(memory)));
  if (cpu.present()) holding.push_back(fmt::format("cpu {} ({})", settings.cpu_limit, Version(cpu)));
  if (pids.present()) holding.push_back(fmt::format("pids {} ({})", settings.attempt_pids_max, Version(pids)));
  return holding.empty() ? "none" : fmt::format("{}", fmt::join(holding, ", "));
}

void LimitControllers::RemoveRoots() const {
  for (const LimitController* controller : {&memory, &pids, &cpu}) {
    if (controller->present() && !controller->v2) rmdir(controller->root.c_str());
  }
}

std::vector<CgroupWrite> MemoryLimitWrites(int64_t bytes, bool v2) {
  if (bytes <= 0) return {};
  const std::string value = std::to_string(bytes);
  // No swap either: a rank over its memory would otherwise page out to
  // the node's swap and slow every neighbour, instead of being stopped.
  if (v2) return {{"memory.max", value}, {"memory.swap.max", "0", true}};
  // v1's memsw limit (memory and swap together) may not be below the
  // memory limit, so it is written second.
  return {{"memory.limit_in_bytes", value}, {"memory.memsw.limit_in_bytes", value, true}};
}

std::vector<CgroupWrite> CpuLimitWrites(double cpus, bool v2, const std::string& cpu_limit) {
  if (cpus <= 0 || cpu_limit == "none") return {};
  std::vector<CgroupWrite> out;
  out.push_back({CpuWeightFile(v2), std::to_string(CpuWeight(cpus, v2))});
  if (cpu_limit == "quota") {
    const int64_t quota = std::max<int64_t>(std::llround(cpus * kCpuPeriodUs), 1000);
    if (v2) {
      out.push_back({"cpu.max", fmt::format("{} {}", quota, kCpuPeriodUs)});
    } else {
      out.push_back({"cpu.cfs_period_us", std::to_string(kCpuPeriodUs)});
      out.push_back({"cpu.cfs_quota_us", std::to_string(quota)});
    }
  }
  return out;
}

int64_t CpuWeight(double cpus, bool v2) {
  // One CPU is v2's default weight (100) and v1's default shares (1024).
  return v2 ? std::clamp<int64_t>(std::llround(cpus * 100), 1, 10000)
            : std::clamp<int64_t>(std::llround(cpus * 1024), 2, 262144);
}

const char* CpuWeightFile(bool v2) { return v2 ? "cpu.weight" : "cpu.shares"; }

std::vector<CgroupWrite> AttemptWeightWrites(const std::vector<int64_t>& rank_weights, bool v2) {
  if (rank_weights.empty()) return {};
  int64_t total = 0;
  for (int64_t weight : rank_weights) total += weight;
  // v2's weights go from 1 to 10000, v1's shares from 2 to 262144.
  total = v2 ? std::clamp<int64_t>(total, 1, 10000) : std::clamp<int64_t>(total, 2, 262144);
  return {{CpuWeightFile(v2), std::to_string(total)}};
}

std::vector<CgroupWrite> PidsLimitWrites(int64_t pids_max) {
  if (pids_max <= 0) return {};
  return {{"pids.max", std::to_string(pids_max)}};
}

int64_t OomKills(const std::string& folder, bool v2) {
  std::istringstream lines(ReadWholeFile(folder + (v2 ? "/memory.events" : "/memory.oom_control")).value_or(""));
  for (std::string key; lines >> key;) {
    int64_t value = 0;
    if (!(lines >> value)) break;
    if (key == "oom_kill") return value;
  }
  return 0;
}

}  // namespace clusterd
