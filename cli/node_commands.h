// clusterctl status | nodes | node NODE [--reset-gpu N] | drain NODE | stop-node NODE
#pragma once

#include <string>
#include <vector>

namespace clusterd::cli {

int StatusCommand(const std::vector<std::string>& args);
int NodesCommand(const std::vector<std::string>& args);
// One node in full, its GPUs' use and health; --reset-gpu N puts a GPU out for a fault back.
int NodeCommand(const std::vector<std::string>& args);
int DrainCommand(const std::vector<std::string>& args);
int StopNodeCommand(const std::vector<std::string>& args);

}  // namespace clusterd::cli
