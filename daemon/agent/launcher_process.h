// The launcher process: a small single-threaded process that the node agent
// starts once (posix_spawn of clusterd-launcher, daemon/launcher/main.cc) and
// that starts every rank (launcher_client.h is the agent's side). Why a
// process of its own:
// - fork() of the multi-threaded agent copies its whole address space and
//   is unsafe with locks other threads hold; a fork here is small and safe;
// - it holds each attempt apart: an attempt's ranks are the children of a
//   keeper process of their own, forked by the launcher, which is their
//   child subreaper, so that whatever they start (setsid, double forks,
//   a cleared environment) stays below it, and, where the node lets it
//   make cgroups, in the attempt's cgroup too (attempt_cgroup.h). Ending
//   the attempt (EndAttempt) kills the cgroup and the keeper kills all
//   below it. A keeper with nothing of its attempt left below it goes
//   idle and is handed a later attempt (it joins that one's cgroup), so
//   that short jobs pay no fork and exit of a keeper each. Nothing is told
//   apart by its environment, which a process may clear;
// - when the agent dies, even by SIGKILL, its socket closes and the
//   launcher kills every process below it before it exits (the launcher is
//   a subreaper too, for the ranks of a keeper that died). Nothing of a job
//   outlives the agent.
#pragma once

#include <sys/types.h>

#include <string>

namespace clusterd {

// The descriptor on which the launcher finds its socket to the agent.
constexpr int kLauncherSocketFd = 3;

// Serves the agent on `socket_fd` until it goes away; returns the exit code.
int RunLauncherProcess(int socket_fd);

// Sends `bytes` as one packet on a Unix socket and, when fd >= 0, that
// descriptor with it (SCM_RIGHTS: the receiver gets its own copy, so the
// sender may close its at once). Returns what sendmsg returns (errno set).
ssize_t SendPacketWithFd(int socket, const std::string& bytes, int fd);

}  // namespace clusterd
