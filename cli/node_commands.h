// clusterctl status | nodes | drain NODE | stop-node NODE
#pragma once

#include <string>
#include <vector>

namespace clusterd::cli {

int StatusCommand(const std::vector<std::string>& args);
int NodesCommand(const std::vector<std::string>& args);
int DrainCommand(const std::vector<std::string>& args);
int StopNodeCommand(const std::vector<std::string>& args);

}  // namespace clusterd::cli
