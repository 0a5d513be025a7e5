#include "common/config.h"

namespace clusterd {

std::vector<ConfigEntry> ConfigEntries() {
  return {
#define CLUSTERD_CONFIG(type, name, def, desc) {#name, #def, desc},
#include "common/config_def.h"
#undef CLUSTERD_CONFIG
  };
}

}  // namespace clusterd
