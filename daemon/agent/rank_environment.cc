#include "daemon/agent/rank_environment.h"

#include <set>

extern char** environ;

namespace clusterd {

namespace {

// The key of a "KEY=VALUE" entry; the whole entry when it has no '='.
std::string_view KeyOf(std::string_view entry) { return entry.substr(0, entry.find('=')); }

}  // namespace

std::vector<std::string> AgentEnvironment() {
  std::vector<std::string> env;
  std::set<std::string_view> seen;  // a key twice in environ: getenv's, the first
  for (char** e = environ; *e; ++e) {
    std::string_view entry = *e;
    if (entry.find('=') == std::string_view::npos) continue;
    if (KeyOf(entry) == "CLUSTER_TOKEN") continue;  // a rank has no business with the cluster token
    if (seen.insert(KeyOf(entry)).second) env.emplace_back(entry);
  }
  return env;
}

std::vector<std::string> MergeEnvironment(const std::vector<std::string>& base, const EnvOverrides& overrides) {
  std::vector<std::string> env;
  env.reserve(base.size() + overrides.size());
  for (const std::string& entry : base) {
    if (!overrides.count(KeyOf(entry))) env.push_back(entry);
  }
  for (const auto& [key, value] : overrides) {
    std::string& entry = env.emplace_back();
    entry.reserve(key.size() + 1 + value.size());
    entry.append(key).append(1, '=').append(value);
  }
  return env;
}

std::optional<std::string_view> EnvironmentValue(const std::vector<std::string>& env, std::string_view key) {
  for (const std::string& entry : env) {
    std::string_view view = entry;
    if (view.size() > key.size() && view[key.size()] == '=' && view.substr(0, key.size()) == key) {
      return view.substr(key.size() + 1);
    }
  }
  return std::nullopt;
}

}  // namespace clusterd
