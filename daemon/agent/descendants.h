// The processes below a process, found in /proc by parent pid, whatever
// their process group or session: what the node agent and its launcher
// process kill when ranks leave things behind.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace clusterd {

// Every live (not zombie) process below `root`, at any depth.
std::vector<pid_t> Descendants(pid_t root);

// The children of `pid`'s main thread (of a single-threaded process, all
// its children), zombies included, from one read of
// /proc/PID/task/PID/children rather than a scan of every process; nullopt
// where the kernel does not offer that file.
std::optional<std::vector<pid_t>> MainThreadChildren(pid_t pid);

// Of `pids`, those whose environment holds CLUSTER_JOB_ID=job_id and
// CLUSTER_ATTEMPT=attempt: the processes an attempt's ranks started.
std::vector<pid_t> OfAttempt(const std::vector<pid_t>& pids, const std::string& job_id, int attempt);

}  // namespace clusterd
