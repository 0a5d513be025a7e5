#include "common/config.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <limits>

#include <fmt/format.h>

namespace clusterd {

namespace {

Status ParseValue(const std::string& variable, const std::string& text, int64_t low, int64_t high, int64_t* out) {
  errno = 0;
  char* end = nullptr;
  const long long value = std::strtoll(text.c_str(), &end, 10);
  if (end == text.c_str() || *end != '\0') {
    return Status::InvalidArgument(fmt::format("{}='{}' is not a whole number", variable, text));
  }
  if (errno == ERANGE || value < low || value > high) {
    return Status::InvalidArgument(fmt::format("{}='{}' is out of range ({} to {})", variable, text, low, high));
  }
  *out = value;
  return Status::Ok();
}

Status ParseValue(const std::string& variable, const std::string& text, int* out) {
  int64_t value = 0;
  RETURN_IF_ERROR(ParseValue(variable, text, std::numeric_limits<int>::min(), std::numeric_limits<int>::max(), &value));
  *out = static_cast<int>(value);
  return Status::Ok();
}

Status ParseValue(const std::string& variable, const std::string& text, int64_t* out) {
  return ParseValue(variable, text, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(), out);
}

Status ParseValue(const std::string&, const std::string& text, std::string* out) {
  *out = text;
  return Status::Ok();
}

template <typename T>
Status ReadVariable(const char* name, T* value) {
  const std::string variable = ClusterctlEnvironmentName(name);
  const char* text = std::getenv(variable.c_str());
  if (text == nullptr || *text == '\0') return Status::Ok();
  return ParseValue(variable, text, value);
}

}  // namespace

std::vector<ConfigEntry> ConfigEntries() {
  return {
#define CLUSTERD_CONFIG(type, name, def, desc) {#name, #def, desc, false},
#define CLUSTERCTL_CONFIG(type, name, def, desc) {#name, #def, desc, true},
#include "common/config_def.h"
#undef CLUSTERCTL_CONFIG
#undef CLUSTERD_CONFIG
  };
}

std::string ClusterctlEnvironmentName(const std::string& name) {
  std::string variable = "CLUSTER_";
  for (char c : name) variable += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return variable;
}

Status ReadClusterctlEnvironment(Config* config) {
#define CLUSTERD_CONFIG(type, name, def, desc)
#define CLUSTERCTL_CONFIG(type, name, def, desc) RETURN_IF_ERROR(ReadVariable(#name, &config->name));
#include "common/config_def.h"
#undef CLUSTERCTL_CONFIG
#undef CLUSTERD_CONFIG
  return Status::Ok();
}

}  // namespace clusterd
