// `clusterd start`: flags, their checks, and daemonizing once the daemon
// reports that it is up (or why it is not).
#pragma once

#include <string>
#include <vector>

namespace clusterd {

int StartCommand(const std::vector<std::string>& args);

}  // namespace clusterd
