#include "ctrain/env.h"

#include <cerrno>
#include <cstdlib>
#include <stdexcept>
#include <vector>

namespace ctrain {
namespace {

int parse_int(const char* name, const char* value, long lo, long hi) {
  errno = 0;
  char* end = nullptr;
  long v = std::strtol(value, &end, 10);
  if (errno != 0 || end == value || *end != '\0' || v < lo || v > hi) {
    throw std::runtime_error(std::string("ctrain: environment variable ") + name + "='" + value +
                             "' is not an integer in [" + std::to_string(lo) + ", " +
                             std::to_string(hi) + "]");
  }
  return static_cast<int>(v);
}

}  // namespace

DistEnv read_dist_env(const std::function<const char*(const char*)>& getenv_fn) {
  // An empty value counts as unset: launchers sometimes export VAR= to clear.
  auto get = [&](const char* name) -> const char* {
    const char* v = getenv_fn(name);
    return (v != nullptr && *v != '\0') ? v : nullptr;
  };
  static const char* const kRequired[] = {"RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"};
  static const char* const kOptional[] = {"LOCAL_RANK", "LOCAL_WORLD_SIZE", "NODE_RANK"};

  std::vector<std::string> missing;
  bool any = false;
  for (const char* n : kRequired) {
    if (get(n) != nullptr) any = true; else missing.push_back(n);
  }
  for (const char* n : kOptional) {
    if (get(n) != nullptr) any = true;
  }

  DistEnv env;
  if (!any) return env;  // plain single process: rank 0 of 1
  if (!missing.empty()) {
    std::string msg = "ctrain: incomplete distributed environment: missing ";
    for (size_t i = 0; i < missing.size(); ++i) msg += (i ? ", " : "") + missing[i];
    msg += " (set all of RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, or none of them)";
    throw std::runtime_error(msg);
  }

  env.distributed = true;
  env.world_size = parse_int("WORLD_SIZE", get("WORLD_SIZE"), 1, 1 << 20);
  env.rank = parse_int("RANK", get("RANK"), 0, env.world_size - 1);
  env.master_addr = get("MASTER_ADDR");
  env.master_port = parse_int("MASTER_PORT", get("MASTER_PORT"), 1, 65535);
  env.local_world_size = get("LOCAL_WORLD_SIZE")
                             ? parse_int("LOCAL_WORLD_SIZE", get("LOCAL_WORLD_SIZE"), 1, env.world_size)
                             : env.world_size;
  env.local_rank = get("LOCAL_RANK")
                       ? parse_int("LOCAL_RANK", get("LOCAL_RANK"), 0, env.local_world_size - 1)
                       : env.rank % env.local_world_size;
  env.node_rank = get("NODE_RANK") ? parse_int("NODE_RANK", get("NODE_RANK"), 0, env.world_size - 1) : 0;
  return env;
}

DistEnv read_dist_env() {
  return read_dist_env([](const char* n) { return static_cast<const char*>(std::getenv(n)); });
}

}  // namespace ctrain
