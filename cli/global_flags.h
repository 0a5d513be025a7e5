// Global flags may come before the command, as kubectl and docker accept:
// `clusterctl --address H:P status` is `clusterctl status --address H:P`.
// The connection flags and --json are parsed by each command (command_line.h);
// this only moves the leading ones behind the command's name.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace clusterd::cli {

// args: everything after "clusterctl". Returns them with the command first
// and the flags that preceded it after it, in their order. An unknown flag
// before the command, or a value flag without its value, is an error.
Result<std::vector<std::string>> MoveGlobalFlags(const std::vector<std::string>& args);

}  // namespace clusterd::cli
