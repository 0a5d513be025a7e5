// What /proc tells about a rank's processes, for hang detection and its
// diagnosis (docs/RELIABILITY.md "Hung gangs"): the CPU time its whole
// process tree used, and what a process waits on in the kernel. A rank's
// work is often in processes it started (a shell's program, a Python
// launcher's workers), so each rank counts with everything below it.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace clusterd {

// For each root: the CPU time (user and system, clock ticks, reaped
// children's included) of it and every live process below it, from one
// scan of /proc for all of them. A root that is gone is left out.
std::map<pid_t, int64_t> ProcessTreeCpuTicks(const std::vector<pid_t>& roots);

// One process of a rank, as diagnosed.
struct ProcessProbe {
  pid_t pid = 0;
  std::string name;          // /proc/PID/comm
  bool python = false;       // its executable is a Python interpreter
  bool catches_sigquit = false;  // it has a handler for SIGQUIT (/proc/PID/status SigCgt)
  std::string wait_channel;  // /proc/PID/wchan; "running" for 0, "unreadable" where it is not
  std::string kernel_stack;  // /proc/PID/stack (root only); "unreadable" where it is not
};

// The rank's own process and those below it, parents first, at most
// `limit` of them; none when `root` is gone.
std::vector<ProcessProbe> ProbeProcessTree(pid_t root, size_t limit);

// The process of a rank most worth naming when it hangs: its first Python
// process, else the deepest one (the program a shell started), else the
// rank's own. REQUIRES: !tree.empty().
const ProcessProbe& MostTelling(const std::vector<ProcessProbe>& tree);

}  // namespace clusterd
