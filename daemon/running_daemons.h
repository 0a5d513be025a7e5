// The clusterd daemons running on this machine under a temp dir, found by
// the pid files of its sessions: what `clusterd stop` stops, and what a
// second `clusterd start` of a worker would run beside.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace clusterd {

struct RunningDaemon {
  pid_t pid;
  std::string pid_file;  // <session>/pids/<role>-<pid>.pid
  std::string role;      // "head" or "worker", from the file's name
};

// Live daemons of every session under temp_dir; a pid file whose process is
// gone (or whose pid another process took since) is removed as stale.
std::vector<RunningDaemon> FindRunningDaemons(const std::string& temp_dir);

// The process runs and has not exited (a zombie has).
bool Alive(pid_t pid);

}  // namespace clusterd
