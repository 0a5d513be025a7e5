// The job's `config:` map as a training program sees it: CLUSTER_CONFIG
// (or the file CLUSTER_CONFIG_FILE names, for a config too large for the
// environment), a JSON object. A sweep's trial finds its parameters here,
// merged over the job's config. No libtorch.
//
//   double lr = ctrain::config_double("lr", 1e-3);   // 1e-3 when absent
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace ctrain {

// Top-level key -> its value as compact JSON text, strings unquoted ("0.01",
// "64", "adam", "true", "[1,{\"a\":2}]"). Read once; {} outside a job. Throws
// std::runtime_error naming the variable when it holds no JSON object.
const std::map<std::string, std::string>& config();

// Typed reads with a fallback for an absent key; a value of the wrong type
// throws std::runtime_error naming the key.
double config_double(const std::string& key, double fallback);
int64_t config_int(const std::string& key, int64_t fallback);
std::string config_string(const std::string& key, const std::string& fallback);

// The parser behind config(), for tests. Throws std::runtime_error.
std::map<std::string, std::string> parse_config(const std::string& json);

}  // namespace ctrain
