// Reading the worker environment that clusterd (or torchrun) sets for a rank.
//
// Contract (DESIGN.md rule 4): RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
// NODE_RANK, MASTER_ADDR, MASTER_PORT.
//  - none of them set: a single process, rank 0 of world size 1;
//  - RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT are required together; if
//    some but not all are set, read_dist_env() throws std::runtime_error whose
//    message names every missing variable;
//  - LOCAL_RANK defaults to RANK, LOCAL_WORLD_SIZE to WORLD_SIZE and NODE_RANK
//    to 0 (one node), as torchrun does for a single machine;
//  - a value that is not a number, or is out of range (RANK >= WORLD_SIZE,
//    port outside 1..65535), throws with the variable's name and value.
// No libtorch here, so this is testable and cheap to compile.
#pragma once

#include <functional>
#include <string>

namespace ctrain {

struct DistEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
  int node_rank = 0;
  std::string master_addr;  // empty when world_size == 1 and nothing was set
  int master_port = 0;
  bool distributed = false;  // true when the variables were set (even for WORLD_SIZE=1)
};

// Reads from the process environment.
DistEnv read_dist_env();

// Same, with an injectable lookup (returns nullptr for "unset"); for tests.
DistEnv read_dist_env(const std::function<const char*(const char*)>& getenv_fn);

}  // namespace ctrain
