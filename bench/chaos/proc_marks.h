// Finding processes through /proc (the simulated machines share the
// benchmark's pid namespace): a machine's clusterd, the processes whose
// environment holds a job marker, and the size of a folder.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "machines.h"

namespace clusterd::bench {

// The pid of the machine's clusterd, or nullopt.
std::optional<pid_t> ClusterdPid(testing::Machine& machine);
// Whether pid's environment holds `variable` exactly (NAME=VALUE).
bool HasVariable(pid_t pid, const std::string& variable);
// Every live (not zombie) process whose environment holds `variable`.
std::vector<pid_t> PidsWithVariable(const std::string& variable);
// "pid comm: argv" for a report.
std::string DescribePid(pid_t pid);
// Bytes of the regular files under `path`; those under path/journal (the
// head's journal folder) also into *journal.
int64_t FolderBytes(const std::string& path, int64_t* journal);

}  // namespace clusterd::bench
