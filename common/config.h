// The tunables table (config_def.h) as a struct with defaults, its listing
// (what `clusterd start --help` and docs/CONFIG.md show), and how
// clusterctl's keys are read from the environment.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace clusterd {

struct Config {
#define CLUSTERD_CONFIG(type, name, def, desc) type name = def;
#define CLUSTERCTL_CONFIG(type, name, def, desc) type name = def;
#include "common/config_def.h"
#undef CLUSTERCTL_CONFIG
#undef CLUSTERD_CONFIG
};

struct ConfigEntry {
  std::string name;
  std::string default_value;  // as written in config_def.h ("\"auto\"" for a string)
  std::string description;
  bool clusterctl = false;    // read by clusterctl from the environment, not a flag of `clusterd start`
};

// Every entry of config_def.h, in file order.
std::vector<ConfigEntry> ConfigEntries();

// The environment variable that sets clusterctl's key `name`:
// rpc_timeout_ms is CLUSTER_RPC_TIMEOUT_MS.
std::string ClusterctlEnvironmentName(const std::string& name);

// Sets each of clusterctl's keys whose variable is set and not empty. A
// value that is not of the key's type is an error naming the variable.
Status ReadClusterctlEnvironment(Config* config);

}  // namespace clusterd
