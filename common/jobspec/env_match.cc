#include "common/jobspec/env_match.h"

#include <fnmatch.h>

#include <algorithm>
#include <cstring>

namespace clusterd {

const std::vector<std::string>& ReservedWorkerVariables() {
  static const std::vector<std::string> kNames = {
      "RANK",           "WORLD_SIZE",      "LOCAL_RANK",      "LOCAL_WORLD_SIZE",
      "NODE_RANK",      "MASTER_ADDR",     "MASTER_PORT",     "CLUSTER_JOB_ID",
      "CLUSTER_JOB_NAME", "CLUSTER_ATTEMPT", "CLUSTER_CHECKPOINT_DIR", "CLUSTER_CHECKPOINT_KEEP",
      "CLUSTER_CONFIG", "CLUSTER_ARRAY_ID", "CLUSTER_ARRAY_INDEX", "CLUSTER_ARRAY_COUNT",
  };
  return kNames;
}

bool IsReservedWorkerVariable(const std::string& name) {
  // Every CLUSTER_* (CLUSTER_TOKEN above all) and the GPU list are clusterd's.
  if (name.rfind("CLUSTER_", 0) == 0 || name == "CUDA_VISIBLE_DEVICES") return true;
  const auto& names = ReservedWorkerVariables();
  return std::find(names.begin(), names.end(), name) != names.end();
}

bool MatchesAnyPattern(const std::vector<std::string>& patterns, const std::string& name) {
  return std::any_of(patterns.begin(), patterns.end(),
                     [&](const std::string& p) { return fnmatch(p.c_str(), name.c_str(), 0) == 0; });
}

std::map<std::string, std::string> MatchPassthrough(const std::vector<std::string>& patterns,
                                                    const std::map<std::string, std::string>& vars) {
  std::map<std::string, std::string> out;
  for (const auto& [name, value] : vars) {
    if (!IsReservedWorkerVariable(name) && MatchesAnyPattern(patterns, name)) out.emplace(name, value);
  }
  return out;
}

std::map<std::string, std::string> MatchPassthrough(const std::vector<std::string>& patterns,
                                                    const char* const* environ_like) {
  std::map<std::string, std::string> vars;
  for (const char* const* entry = environ_like; entry != nullptr && *entry != nullptr; ++entry) {
    const char* eq = std::strchr(*entry, '=');
    if (eq == nullptr || eq == *entry) continue;
    // The first occurrence wins, as getenv(3) reads a duplicated name.
    vars.emplace(std::string(*entry, eq), std::string(eq + 1));
  }
  return MatchPassthrough(patterns, vars);
}

}  // namespace clusterd
