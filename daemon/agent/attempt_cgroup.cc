#include "daemon/agent/attempt_cgroup.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "common/file_util.h"
#include "daemon/agent/cgroup_fs.h"

namespace clusterd {

namespace {

// How long KillAll keeps freezing and killing before it gives up on a
// member that will not go (one stuck in the kernel, say).
constexpr auto kKillBound = std::chrono::seconds(5);

bool WriteAll(const std::string& folder, const std::vector<CgroupWrite>& writes, std::string* why) {
  for (const CgroupWrite& write : writes) {
    const std::string file = folder + "/" + write.file;
    if (write.optional && access(file.c_str(), F_OK) != 0) continue;
    if (!WriteCgroupFile(file, write.value)) {
      *why = fmt::format("cannot write {} to {}: {}", write.value, file, std::strerror(errno));
      return false;
    }
  }
  return true;
}

}  // namespace

const char* ContainmentName(ContainmentKind kind) {
  switch (kind) {
    case ContainmentKind::kCgroupV2:
      return "cgroup v2";
    case ContainmentKind::kCgroupV1:
      return "cgroup v1";
    case ContainmentKind::kSubreaper:
      break;
  }
  return "subreaper";
}

Result<Containment> Containment::Detect(const std::string& mode, const std::string& name,
                                        const LimitSettings& settings) {
  Containment out;
  out.limits.settings = settings;
  if (mode == "subreaper") {
    out.why_not = "the node's containment setting is subreaper";
    out.limits.why_not = "no cgroups (containment subreaper)";
    return out;
  }
  if (mode != "auto") {
    return Status::InvalidArgument(fmt::format("--containment: expected auto or subreaper, got '{}'", mode));
  }
  if (Status checked = CheckLimitSettings(settings); !checked.ok()) return checked;
  std::vector<std::string> why;
  const std::vector<CgroupMount> mounts = CgroupMounts();
  for (const CgroupMount& mount : mounts) {
    if (mount.fstype != "cgroup2") continue;
    auto made = MakeCgroupBelow(mount.point, OwnCgroup(""), name);
    if (made.ok()) {
      out.kind = ContainmentKind::kCgroupV2;
      out.root = *made;
      break;
    }
    why.push_back(made.status().message());
  }
  if (out.kind == ContainmentKind::kSubreaper) {
    if (const CgroupMount* freezer = V1MountOf(mounts, "freezer")) {
      auto made = MakeCgroupBelow(freezer->point, OwnCgroup("freezer"), name);
      if (made.ok()) {
        out.kind = ContainmentKind::kCgroupV1;
        out.root = *made;
      } else {
        why.push_back(made.status().message());
      }
    }
  }
  if (out.kind == ContainmentKind::kSubreaper) {
    out.why_not = why.empty() ? "no cgroup v2 hierarchy and no cgroup v1 freezer is mounted"
                              : fmt::format("{}", fmt::join(why, "; "));
  }
  out.limits = LimitControllers::Find(out.kind == ContainmentKind::kCgroupV2 ? out.root : "", name, settings);
  return out;
}

void Containment::RemoveRoot() const {
  if (!root.empty()) rmdir(root.c_str());
  limits.RemoveRoots();
}

AttemptCgroup::AttemptCgroup(ContainmentKind kind, const std::string& root, const std::string& name,
                             const LimitControllers& limits)
    : kind_(kind), name_(name), path_(root.empty() ? "" : root + "/" + name), limits_(limits) {}

std::string AttemptCgroup::LimitFolder(const LimitController& controller) const {
  return controller.present() ? controller.root + "/" + name_ : "";
}

std::vector<std::string> AttemptCgroup::Folders() const {
  std::vector<std::string> out;
  for (const std::string& folder :
       {path_, LimitFolder(limits_.memory), LimitFolder(limits_.pids), LimitFolder(limits_.cpu)}) {
    if (!folder.empty() && std::find(out.begin(), out.end(), folder) == out.end()) out.push_back(folder);
  }
  return out;
}

bool AttemptCgroup::V2Leaves() const {
  // cgroup v2 lets only a cgroup without processes of its own hand its
  // children controllers (v1 lets a folder hold processes beside them).
  return kind_ == ContainmentKind::kCgroupV2 && (limits_.memory.v2 || limits_.cpu.v2);
}

std::vector<std::string> AttemptCgroup::KeeperFolders() const {
  // Not v1's memory: only a rank's own limit is held there.
  std::vector<std::string> out;
  if (!path_.empty()) out.push_back(V2Leaves() ? path_ + "/keeper" : path_);
  for (const LimitController* controller : {&limits_.pids, &limits_.cpu}) {
    if (controller->present() && !controller->v2) out.push_back(LimitFolder(*controller));
  }
  return out;
}

Status AttemptCgroup::Create() const {
  for (const std::string& folder : Folders()) {
    // v1's memory folder waits for a rank with a memory limit (PrepareRank):
    // a memory cgroup is the dearest to make and to remove.
    if (folder == LimitFolder(limits_.memory) && !limits_.memory.v2) continue;
    if (mkdir(folder.c_str(), 0755) != 0 && errno != EEXIST) {
      return Status::IOError(fmt::format("cannot make the attempt's cgroup {}: {}", folder, std::strerror(errno)));
    }
  }
  // cgroup v2: the attempt's folder hands its ranks' leaves their
  // controllers; it can while it holds no process (the keeper has a leaf).
  for (const auto& [controller, v2] : {std::pair{"memory", limits_.memory.v2}, std::pair{"cpu", limits_.cpu.v2}}) {
    if (v2 && !WriteCgroupFile(path_ + "/cgroup.subtree_control", std::string("+") + controller)) {
      return Status::IOError(fmt::format("cannot enable {} in {}/cgroup.subtree_control: {}", controller, path_,
                                         std::strerror(errno)));
    }
  }
  std::string why;
  if (limits_.pids.present() &&
      !WriteAll(LimitFolder(limits_.pids), PidsLimitWrites(limits_.settings.attempt_pids_max), &why)) {
    return Status::IOError(fmt::format("cannot hold the attempt to its pids limit: {}", why));
  }
  if (V2Leaves() && mkdir((path_ + "/keeper").c_str(), 0755) != 0 && errno != EEXIST) {
    return Status::IOError(fmt::format("cannot make {}/keeper: {}", path_, std::strerror(errno)));
  }
  return Status::Ok();
}

Status AttemptCgroup::Add(int pid) const {
  for (const std::string& folder : KeeperFolders()) {
    if (!WriteCgroupFile(folder + "/cgroup.procs", fmt::format("{}\n", pid))) {
      return Status::IOError(fmt::format("cannot move pid {} into {}: {}", pid, folder, std::strerror(errno)));
    }
  }
  return Status::Ok();
}

Result<std::vector<int>> AttemptCgroup::PrepareRank(int rank, const RankLimits& limits) {
  const std::string leaf = fmt::format("/rank-{}", rank);
  const bool cpu_weighed = limits_.cpu.present() && limits.cpus > 0 && limits_.settings.cpu_limit != "none";
  // The leaves the rank's process enters: where it has a limit of its own
  // (a memory limit, a CPU quota), and cgroup v2's when the attempt's folder
  // hands controllers to its children, and so holds no process itself.
  // Everywhere else it stays where its
  // keeper put itself (Add), as a forked process does: no cgroup to make
  // or enter per rank, which a stream of short jobs would pay for in
  // throughput (a new cgroup, and a new css_set in the kernel per entry).
  std::vector<std::string> leaves;
  auto enter = [&](const std::string& attempt_folder) -> Status {
    const std::string target = attempt_folder + leaf;
    if (std::find(leaves.begin(), leaves.end(), target) != leaves.end()) return Status::Ok();
    for (const std::string& folder : {attempt_folder, target}) {  // v1's memory folder is made here
      if (mkdir(folder.c_str(), 0755) != 0 && errno != EEXIST) {
        return Status::IOError(fmt::format("cannot make {}: {}", folder, std::strerror(errno)));
      }
    }
    leaves.push_back(target);
    if (std::find(leaves_made_.begin(), leaves_made_.end(), target) == leaves_made_.end()) {
      leaves_made_.push_back(target);
    }
    return Status::Ok();
  };
  const bool cpu_leaf = cpu_weighed && (limits_.cpu.v2 || limits_.settings.cpu_limit == "quota");
  Status entered = Status::Ok();
  if (V2Leaves()) entered = enter(path_);
  if (entered.ok() && limits_.memory.present() && (limits_.memory.v2 || limits.memory_bytes > 0)) {
    entered = enter(LimitFolder(limits_.memory));
  }
  if (entered.ok() && limits_.pids.present() && limits_.pids.v2) entered = enter(LimitFolder(limits_.pids));
  if (entered.ok() && cpu_leaf) entered = enter(LimitFolder(limits_.cpu));
  if (!entered.ok()) return entered;

  std::string why;
  if (limits_.memory.present() && limits.memory_bytes > 0 &&
      !WriteAll(LimitFolder(limits_.memory) + leaf, MemoryLimitWrites(limits.memory_bytes, limits_.memory.v2), &why)) {
    return Status::IOError(fmt::format("cannot hold rank {} to its memory: {}", rank, why));
  }
  if (!cpu_weighed && weight_left_ && limits_.cpu.present()) {
    // The last attempt's weight would count for this one's rank.
    if (!WriteAll(LimitFolder(limits_.cpu), {{CpuWeightFile(limits_.cpu.v2), std::to_string(CpuWeight(1, limits_.cpu.v2))}},
                  &why)) {
      return Status::IOError(fmt::format("cannot reset the attempt's CPU weight: {}", why));
    }
    weight_left_ = false;
  }
  if (cpu_weighed) {
    weight_left_ = false;
    const std::string attempt = LimitFolder(limits_.cpu);
    if (cpu_leaf &&
        !WriteAll(attempt + leaf, CpuLimitWrites(limits.cpus, limits_.cpu.v2, limits_.settings.cpu_limit), &why)) {
      return Status::IOError(fmt::format("cannot hold rank {} to its CPUs: {}", rank, why));
    }
    // The attempt weighs as all its ranks here together: against other
    // attempts, a 2-rank attempt of 1 CPU each is worth 2 CPUs.
    rank_cpu_weights_[rank] = CpuWeight(limits.cpus, limits_.cpu.v2);
    std::vector<int64_t> weights;
    for (const auto& [_, weight] : rank_cpu_weights_) weights.push_back(weight);
    if (!WriteAll(attempt, AttemptWeightWrites(weights, limits_.cpu.v2), &why)) {
      return Status::IOError(fmt::format("cannot weigh the attempt by its ranks' CPUs: {}", why));
    }
  }
  std::vector<int> fds;
  for (const std::string& target : leaves) {
    const std::string procs = target + "/cgroup.procs";
    const int fd = open(procs.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
      for (int opened : fds) close(opened);
      return Status::IOError(fmt::format("cannot open {}: {}", procs, std::strerror(errno)));
    }
    fds.push_back(fd);
  }
  return fds;
}

void AttemptCgroup::ClearForNextAttempt() {
  for (const std::string& leaf : leaves_made_) RemoveCgroupTree(leaf);
  leaves_made_.clear();
  weight_left_ = weight_left_ || !rank_cpu_weights_.empty();
  rank_cpu_weights_.clear();
}

bool AttemptCgroup::OutOfMemory(int rank) const {
  return limits_.memory.present() &&
         OomKills(fmt::format("{}/rank-{}", LimitFolder(limits_.memory), rank), limits_.memory.v2) > 0;
}

int AttemptCgroup::KillAll() const {
  if (path_.empty()) return 0;
  std::vector<int> members = CgroupMembers(path_);
  const int found = static_cast<int>(members.size());
  if (members.empty()) return 0;
  // One write kills every member at once, those forking meanwhile included.
  if (kind_ == ContainmentKind::kCgroupV2 && WriteCgroupFile(path_ + "/cgroup.kill", "1")) return found;
  // Else frozen first (the whole tree below it): a member cannot fork a
  // new one between the listing and the kill.
  const bool v2 = kind_ == ContainmentKind::kCgroupV2;
  const std::string freeze = path_ + (v2 ? "/cgroup.freeze" : "/freezer.state");
  const auto give_up = std::chrono::steady_clock::now() + kKillBound;
  while (!members.empty() && std::chrono::steady_clock::now() < give_up) {
    WriteCgroupFile(freeze, v2 ? "1" : "FROZEN");
    for (int pid : members) kill(pid, SIGKILL);
    WriteCgroupFile(freeze, v2 ? "0" : "THAWED");  // a frozen process dies of SIGKILL only once thawed
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    members = CgroupMembers(path_);
  }
  return found;
}

bool AttemptCgroup::Remove() const {
  bool removed = true;
  for (const std::string& folder : Folders()) removed = RemoveCgroupTree(folder) && removed;
  return removed;
}

}  // namespace clusterd
