// Starting one rank as a process: its own process group, a parent-death
// signal, a working directory, an exact environment, and stdout+stderr to
// a pipe the agent reads (or a log file). Exec failures come back as an
// error, not as a silent exit.
#pragma once

#include <sys/types.h>

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
};

// REQUIRES: called from a thread that lives as long as the child should
// (PR_SET_PDEATHSIG fires when the forking thread exits).
Result<pid_t> SpawnProcess(const SpawnRequest& request);

}  // namespace clusterd
