// clusterd-launcher: the node agent's launcher process (launcher_process.h),
// a binary of its own. The launcher forks a keeper for every attempt, and
// what a fork and the keeper's exit cost grows with the mappings of the
// process forked: clusterd links 74 libraries (gRPC, Abseil, Boost, curl
// ...) in about 400 mappings, this one the few the launcher uses.
// docs/BENCHMARKS.md (jobs) has what it is worth in jobs per second.
#include <csignal>

#include "daemon/agent/launcher_process.h"

int main() {
  // A rank's output pipe or report socket that hangs up must cost a
  // write an EPIPE, not the launcher its life.
  signal(SIGPIPE, SIG_IGN);
  return clusterd::RunLauncherProcess(clusterd::kLauncherSocketFd);
}
