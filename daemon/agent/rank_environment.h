// A rank's environment as exec takes it: "KEY=VALUE" strings, each key
// once. Most of it is the agent's own environment, the same for every
// rank; a launch sets a score of keys over it. Building it as a list
// instead of a std::map per rank, copied again into the launcher's
// request and parsed back into a map there, takes a twentieth of the CPU a
// one-rank job costs the machine (perf, bench/jobs throughput).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace clusterd {

// What a launch sets over the agent's environment, by key.
using EnvOverrides = std::map<std::string, std::string, std::less<>>;

// The calling process's environment less what no rank may see
// (CLUSTER_TOKEN), in its own order.
std::vector<std::string> AgentEnvironment();

// `base` with `overrides` set over it: base's entries whose keys are not
// overridden, in base's order, then the overrides in key order.
std::vector<std::string> MergeEnvironment(const std::vector<std::string>& base, const EnvOverrides& overrides);

// The value of `key` in a "KEY=VALUE" list, if it is there.
std::optional<std::string_view> EnvironmentValue(const std::vector<std::string>& env, std::string_view key);

}  // namespace clusterd
