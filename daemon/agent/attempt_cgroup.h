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
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

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

  // Finds what the node offers and makes root, a cgroup named `name`
  // below this process's own (v2 first, then v1's freezer). `mode` is the
  // config's containment: "auto", or "subreaper" for no cgroups at all.
  static Result<Containment> Detect(const std::string& mode, const std::string& name);
  // Removes root (once the launcher is gone and its attempts' cgroups with it).
  void RemoveRoot() const;
};

// One attempt's cgroup: `name` below a Containment's root.
class AttemptCgroup {
 public:
  AttemptCgroup(ContainmentKind kind, const std::string& root, const std::string& name);

  // Makes the folder (an existing one is taken as is).
  Status Create() const;
  // Moves process `pid` (and, as it forks later, its children) into it.
  Status Add(int pid) const;
  // SIGKILLs everything in it: cgroup.kill on v2 (Linux 5.14+); else
  // frozen, every member killed, thawed, until it is empty (bounded).
  // Returns how many processes it found.
  int KillAll() const;
  // Removes the folder; false while it still holds processes that are not
  // reaped yet (try again later) or it is gone already (true then).
  bool Remove() const;
  const std::string& path() const { return path_; }

 private:
  std::vector<int> Members() const;
  ContainmentKind kind_;
  std::string path_;
};

}  // namespace clusterd
