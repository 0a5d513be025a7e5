// The launcher process: a small single-threaded process that the node agent
// starts once (posix_spawn of its own binary as `clusterd __launcher`) and
// that starts every rank (launcher_client.h is the agent's side). Why a
// process of its own:
// - fork() of the multi-threaded agent copies its whole address space and
//   is unsafe with locks other threads hold; a fork here is small and safe;
// - it is the ranks' child subreaper, so whatever a rank leaves outside its
//   process group (setsid, double forks) comes back to it; and when the
//   agent dies, even by SIGKILL, its socket closes and the launcher kills
//   every process below it before it exits. Nothing of a job outlives the
//   agent.
#pragma once

namespace clusterd {

// The descriptor on which the launcher finds its socket to the agent.
constexpr int kLauncherSocketFd = 3;

// Serves the agent on `socket_fd` until it goes away; returns the exit code.
int RunLauncherProcess(int socket_fd);

}  // namespace clusterd
