// A cgroup per attempt: what holds every process an attempt's ranks
// start, whatever they do to leave (setsid, double forks, a cleared
// environment), so that ending the attempt ends all of them. Used where
// the node lets this process make cgroups: a cgroup v2 hierarchy it may
// write below its own cgroup (root, or a systemd unit with Delegate=yes),
// else cgroup v1's freezer controller. Where neither can be had, the
// attempt's keeper process (launcher_process.cc), child subreaper of its
// ranks, holds them alone.
// The node agent picks the kind and makes the root folder once
// (Containment::Detect); the launcher process makes, kills and removes the
// attempts' cgroups below it. No locks: each side is single-threaded here.
//
// An attempt's cgroup is a folder in each hierarchy it uses, which its
// keeper enters and its ranks, started by the keeper, inherit. A rank gets
// a leaf of its own only where it must: in cgroup v2 when the limits use
// its controllers (a folder that hands controllers to its children may
// hold no process, so the keeper has a leaf too), and in v1's memory and
// CPU quota hierarchies when it has a limit there. A cgroup made, entered and removed per rank costs a stream
// of short jobs their throughput (docs/BENCHMARKS.md, jobs).
#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "daemon/agent/cgroup_limits.h"

namespace clusterd {

enum class ContainmentKind { kSubreaper, kCgroupV2, kCgroupV1 };

// "cgroup v2", "cgroup v1" or "subreaper": what `clusterctl status --json`
// shows as the node's clusterd.containment label.
const char* ContainmentName(ContainmentKind kind);

struct Containment {
  ContainmentKind kind = ContainmentKind::kSubreaper;
  // The folder the attempts' cgroups are made in ("" for kSubreaper).
  std::string root;
  // Why there are no cgroups ("" when there are): logged at agent start.
  std::string why_not;
  // Where the attempts' limits are set (none with "subreaper").
  LimitControllers limits;

  // Finds what the node offers and makes root, a cgroup named `name`
  // below this process's own (v2 first, then v1's freezer), and the
  // limits' folders. `mode` is the config's containment: "auto", or
  // "subreaper" for no cgroups at all.
  static Result<Containment> Detect(const std::string& mode, const std::string& name,
                                    const LimitSettings& settings = {});
  // Removes root and the limits' folders (once the launcher is gone and
  // its attempts' cgroups with it).
  void RemoveRoot() const;
};

// One attempt's cgroup: `name` below a Containment's root (none when
// root is ""), and below each of `limits`' roots.
class AttemptCgroup {
 public:
  AttemptCgroup(ContainmentKind kind, const std::string& root, const std::string& name,
                const LimitControllers& limits = {});

  // Makes the folders (existing ones are taken as they are) and sets the
  // attempt's pids limit.
  Status Create() const;
  // Moves process `pid`, the attempt's keeper, into the attempt's folders
  // (its own leaf in cgroup v2), where the ranks it starts stay unless
  // PrepareRank gives them leaves.
  Status Add(int pid) const;
  // Makes rank `rank`'s leaves where it needs them, writes its limits,
  // weighs the attempt by the CPUs of the ranks prepared so far, and opens
  // the leaves' cgroup.procs (close-on-exec) for the rank's process,
  // started by the keeper, to write itself into before it execs
  // (SpawnRequest.cgroup_procs_fds): so nothing it runs is ever outside
  // them. The caller closes them.
  Result<std::vector<int>> PrepareRank(int rank, const RankLimits& limits);
  // Whether the kernel killed a process of rank `rank` for its memory limit.
  bool OutOfMemory(int rank) const;
  // Its keeper takes another attempt, with nothing of the last one left
  // in it: the last attempt's rank leaves go (with their limits and their
  // out-of-memory counts), and its CPU weight is the next attempt's to set
  // (at its first rank: one CPU's, the default, if that rank weighs none).
  void ClearForNextAttempt();
  // SIGKILLs everything in it: cgroup.kill on v2 (Linux 5.14+); else
  // frozen, every member killed, thawed, until it is empty (bounded).
  // Returns how many processes it found.
  int KillAll() const;
  // Removes the folders; false while they still hold processes that are
  // not reaped yet (try again later), true when they are gone.
  bool Remove() const;
  // The folder that holds its processes ("" when the node has none).
  const std::string& path() const { return path_; }

 private:
  // The attempt's folder in every hierarchy it has, each once.
  std::vector<std::string> Folders() const;
  // Where its keeper process is held, whose ranks are there too unless
  // they have leaves of their own.
  std::vector<std::string> KeeperFolders() const;
  // Whether its cgroup v2 folder hands controllers to leaves of its ranks
  // (and its keeper), holding no process itself.
  bool V2Leaves() const;
  std::string LimitFolder(const LimitController& controller) const;
  ContainmentKind kind_;
  std::string name_;
  std::string path_;
  LimitControllers limits_;
  // Each prepared rank's CPU weight, which the attempt's weight adds up.
  std::map<int, int64_t> rank_cpu_weights_;
  // The rank leaves PrepareRank made, for ClearForNextAttempt.
  std::vector<std::string> leaves_made_;
  // A last attempt's weight is still written, for the next one to replace.
  bool weight_left_ = false;
};

}  // namespace clusterd
