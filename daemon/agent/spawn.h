// Starting one rank as a process: its own process group, a parent-death
// signal, a working directory, an exact environment, and stdout+stderr to
// a pipe the agent reads (or a log file). Exec failures come back as an
// error, not as a silent exit.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace clusterd {

struct SpawnRequest {
  std::vector<std::string> argv;
  std::string working_dir;
  // The whole environment, "KEY=VALUE" each key once (rank_environment.h).
  std::vector<std::string> env;
  // Where stdout and stderr go: output_fd when it is set (the write end of
  // the pipe the agent reads; the caller keeps and closes its own copy),
  // else log_path, created or appended.
  int output_fd = -1;
  std::string log_path;
  // When set, the child drops to this user before it enters working_dir
  // and execs: supplementary groups, then gid, then uid (the order in
  // which each step still has the right to make the next).
  bool switch_user = false;
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;
  // What the agent asks of the launcher process (launcher_client.h), which
  // turns it into the fields above: the attempt the rank belongs to
  // ("<job>.attempt-<n>": what it starts ends with the attempt), the user
  // it runs as ("": the daemon's) and whether the job file named it, and
  // the folders to make that user's before it starts.
  std::string attempt;
  std::string run_as;
  bool run_as_asked_by_job = false;
  std::vector<std::string> writable_dirs;
  // The rank's number in its job and what it holds to on this node
  // (cgroup_limits.h): its memory in bytes and its CPUs, 0 for none.
  int rank = 0;
  int64_t memory_limit_bytes = 0;
  double cpus = 0;
  // The launcher's side: the cgroup.procs files of the rank's cgroups,
  // open for writing. The child writes itself into each before it
  // switches user and execs, so that everything the rank runs is held by
  // them from its first instruction. The caller keeps and closes them.
  std::vector<int> cgroup_procs_fds;
};

// REQUIRES: called from a thread that lives as long as the child should
// (PR_SET_PDEATHSIG fires when the forking thread exits).
Result<pid_t> SpawnProcess(const SpawnRequest& request);

}  // namespace clusterd
