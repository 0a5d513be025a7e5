// clusterctl fetch and delete: a job's results after the fact.
#pragma once

#include <string>
#include <vector>

namespace clusterd::cli {

int FetchCommand(const std::vector<std::string>& args);
int DeleteCommand(const std::vector<std::string>& args);

}  // namespace clusterd::cli
