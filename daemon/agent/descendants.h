// The processes below a process, found in /proc by parent pid, whatever
// their process group or session: what the launcher's keepers kill when
// an attempt ends, and the node agent when it stops.
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

}  // namespace clusterd
