// clusterctl submit | validate | jobs | job | logs | stop | metrics
#pragma once

#include <string>
#include <vector>

namespace clusterd::cli {

int SubmitCommand(const std::vector<std::string>& args);
int ValidateCommand(const std::vector<std::string>& args);
int JobsCommand(const std::vector<std::string>& args);
int JobCommand(const std::vector<std::string>& args);
int LogsCommand(const std::vector<std::string>& args);
int StopJobCommand(const std::vector<std::string>& args);
int MetricsCommand(const std::vector<std::string>& args);

}  // namespace clusterd::cli
