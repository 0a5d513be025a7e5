// The agent's one seam to the operating system's processes: start a rank,
// signal its process group, collect the children that have exited, and
// make sure nothing the ranks started outlives the agent. LauncherClient
// (launcher_client.h) does it for real, through a launcher process; unit
// tests drive the rank runner with a fake, in microseconds and with no
// processes.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include <fmt/format.h>

#include "common/status.h"
#include "daemon/agent/spawn.h"

namespace clusterd {

// SpawnRequest.attempt of a job's attempt: "<job>.attempt-<n>".
inline std::string AttemptKey(const std::string& job_id, int attempt) {
  return fmt::format("{}.attempt-{}", job_id, attempt);
}

struct ChildExit {
  pid_t pid = 0;
  int exit_code = 0;  // when it exited
  int signal = 0;     // when a signal ended it
  // The kernel killed (a process of) the rank for its memory limit, this one.
  bool out_of_memory = false;
  int64_t memory_limit_bytes = 0;
};

class Launcher {
 public:
  virtual ~Launcher() = default;
  // Starts a process leading its own process group; an exec failure is an error.
  virtual Result<pid_t> Spawn(const SpawnRequest& request) = 0;
  // Spawn for each request, the results in request order. LauncherClient
  // sends the requests ahead of the answers, so that a node's ranks start
  // back to back instead of one round trip each.
  virtual std::vector<Result<pid_t>> SpawnAll(const std::vector<SpawnRequest>& requests) {
    std::vector<Result<pid_t>> out;
    for (const SpawnRequest& request : requests) out.push_back(Spawn(request));
    return out;
  }
  // Sends signal_number to the process group led by pid.
  virtual void SignalGroup(pid_t pid, int signal_number) = 0;
  // A descriptor that turns readable when Reap() may have something, so the
  // agent hears of an exit at once instead of at its next poll; -1 when
  // there is none (the agent polls). Owned by the launcher: it may change.
  virtual int ReadyFd() const { return -1; }
  // Every child that has exited since the last call, without waiting. May
  // include processes the agent did not start (orphans of its ranks that
  // were handed to it as their subreaper): the caller ignores those.
  virtual std::vector<ChildExit> Reap() = 0;
  // The process group of pid, or -1.
  virtual pid_t GroupOf(pid_t pid) = 0;
  // The parent of pid, or 0 when it is gone.
  virtual pid_t ParentOf(pid_t pid) = 0;
  // SIGKILLs every process still descended from the agent (or handed to it
  // as an orphan), wherever its group or session; returns how many it found.
  virtual int KillDescendants() = 0;
  // SIGKILLs what this attempt's ranks left outside their groups, once the
  // last of them here has ended: everything still in the attempt's cgroup
  // or below its keeper (launcher_process.h), whatever its environment.
  // Returns how many it found.
  virtual int KillLeftovers(const std::string& job_id, int attempt) = 0;
  // False when nothing any rank left is alive (cheap: every child of the
  // launcher and of its keepers is a running rank); true when something may be.
  virtual bool MayHaveLeftovers() = 0;
};

}  // namespace clusterd
