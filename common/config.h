// The tunables table (config_def.h) as a struct with defaults, and the
// listing that `clusterd start --help` prints.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace clusterd {

struct Config {
#define CLUSTERD_CONFIG(type, name, def, desc) type name = def;
#include "common/config_def.h"
#undef CLUSTERD_CONFIG
};

struct ConfigEntry {
  std::string name;
  std::string default_value;
  std::string description;
};

// Every entry of config_def.h, in file order.
std::vector<ConfigEntry> ConfigEntries();

}  // namespace clusterd
