// The job's config, read with nlohmann::json (header-only: a program that
// links ctrain needs no more than libtorch).
#include "ctrain/config.h"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace ctrain {

namespace {

std::string ReadConfigText() {
  if (const char* env = std::getenv("CLUSTER_CONFIG")) return env;
  if (const char* path = std::getenv("CLUSTER_CONFIG_FILE")) {
    std::ifstream in(path);
    if (!in) throw std::runtime_error(std::string("ctrain: cannot read CLUSTER_CONFIG_FILE ") + path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
  return "{}";
}

const std::string* Find(const std::string& key) {
  const auto& c = config();
  auto it = c.find(key);
  return it == c.end() ? nullptr : &it->second;
}

[[noreturn]] void WrongType(const std::string& key, const std::string& value, const char* what) {
  throw std::runtime_error("ctrain: config key '" + key + "': expected " + what + ", got '" + value + "'");
}

}  // namespace

std::map<std::string, std::string> parse_config(const std::string& json) {
  const std::string not_object = "ctrain: config is not a JSON object: ";
  nlohmann::json parsed;
  try {
    parsed = nlohmann::json::parse(json);
  } catch (const nlohmann::json::parse_error& e) {
    // e.what() leads with "[json.exception.parse_error.101] ": the rest says where and what.
    const std::string what = e.what();
    throw std::runtime_error(not_object + what.substr(what.find("] ") + 2));
  }
  if (!parsed.is_object()) throw std::runtime_error(not_object + "it is a JSON " + parsed.type_name());
  std::map<std::string, std::string> out;
  for (const auto& [key, value] : parsed.items()) {
    out[key] = value.is_string() ? value.get<std::string>()
                                 : value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  return out;
}

const std::map<std::string, std::string>& config() {
  static const std::map<std::string, std::string> parsed = parse_config(ReadConfigText());
  return parsed;
}

double config_double(const std::string& key, double fallback) {
  const std::string* v = Find(key);
  if (!v) return fallback;
  char* end = nullptr;
  double x = std::strtod(v->c_str(), &end);
  if (v->empty() || *end != '\0') WrongType(key, *v, "a number");
  return x;
}

int64_t config_int(const std::string& key, int64_t fallback) {
  const std::string* v = Find(key);
  if (!v) return fallback;
  char* end = nullptr;
  double x = std::strtod(v->c_str(), &end);
  if (v->empty() || *end != '\0' || x != static_cast<double>(static_cast<int64_t>(x))) WrongType(key, *v, "an integer");
  return static_cast<int64_t>(x);
}

std::string config_string(const std::string& key, const std::string& fallback) {
  const std::string* v = Find(key);
  return v ? *v : fallback;
}

}  // namespace ctrain
