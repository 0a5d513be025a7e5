// Reading and writing the kernel's cgroup file systems: where the
// hierarchies are mounted, this process's cgroup in each, and making a
// folder below it. What attempt_cgroup.h and cgroup_limits.h share; no
// policy here.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace clusterd {

struct CgroupMount {
  std::string point;          // e.g. /sys/fs/cgroup/memory
  std::string fstype;         // "cgroup2" or "cgroup" (v1)
  std::string super_options;  // v1: its controllers among them ("rw,memory")
};

// Every cgroup v2 and v1 mount this process sees (/proc/self/mountinfo).
std::vector<CgroupMount> CgroupMounts();

// Whether the comma-separated `options` hold `wanted`.
bool HasOption(const std::string& options, const std::string& wanted);

// Whether the space-separated `words` (cgroup.controllers) hold `wanted`.
bool HasWord(const std::string& words, const std::string& wanted);

// This process's cgroup in the hierarchy with `controller` ("" for v2's),
// as /proc/self/cgroup names it ("/" for a hierarchy's root).
std::string OwnCgroup(const std::string& controller);

// The v1 mount that holds `controller`, or nullptr.
const CgroupMount* V1MountOf(const std::vector<CgroupMount>& mounts, const std::string& controller);

// Makes `name` below the cgroup at mount+own (first removing what agents
// that are gone left there: RemoveStaleCgroups); its path, or why not.
Result<std::string> MakeCgroupBelow(const std::string& mount, const std::string& own, const std::string& name);

// Removes the cgroups that node agents which are gone left below `base`:
// "clusterd-PID" whose PID is no process. Whatever is still in them is
// killed first: a machine that lost its agent, launcher and keepers at
// once (SIGKILL of all, a crash) left ranks running that nothing else
// would end. A live agent's are left alone.
void RemoveStaleCgroups(const std::string& base);

// Writes `text` to a cgroup file in one write; false (errno set) when it could not.
bool WriteCgroupFile(const std::string& path, const std::string& text);

// The cgroups directly below `folder`, as paths.
std::vector<std::string> ChildCgroups(const std::string& folder);

// The pids in `folder`'s cgroup.procs and in those of every cgroup below it.
std::vector<int> CgroupMembers(const std::string& folder);

// Removes `folder` and every cgroup below it, deepest first; true when
// it is gone (false while some still hold processes).
bool RemoveCgroupTree(const std::string& folder);

}  // namespace clusterd
