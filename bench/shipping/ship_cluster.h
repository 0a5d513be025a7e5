// The shipping benchmark's three simulated machines (tests/integration/
// machines.h): `head` runs only the head (--num-cpus 0 --num-gpus 0, no node
// agent), `w1` a worker joined as the head's banner says, `client` no daemon
// at all: it holds the working_dir and runs clusterctl. They share nothing
// but the network (a bridge) and the kernel's clock; each /tmp is private.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "machines.h"

namespace clusterd::bench {

class ShipCluster {
 public:
  ShipCluster();
  ~ShipCluster();  // clusterd stop on both daemons' machines; SimNetwork does the rest

  // Starts the head, then w1 with the CLUSTER_TOKEN=... line the head printed,
  // and waits until `clusterctl status` on the client lists w1 ALIVE.
  // False with the reason in *error.
  bool Start(std::string* error);

  // clusterctl's environment on the client: the head's address and token,
  // and XDG_CACHE_HOME (so the hash cache is at HashCacheDir()).
  std::map<std::string, std::string> ClientEnv() const;
  static std::string CacheHome() { return "/tmp/xdg"; }
  static std::string HashCacheDir() { return CacheHome() + "/clusterd/hashes"; }
  static std::string PackingDir() { return CacheHome() + "/clusterd/packing"; }

  // A job's state from `clusterctl job ID --json` on the client ("" if unknown).
  std::string JobState(const std::string& job_id);

  testing::SimNetwork net;
  testing::Machine& head;
  testing::Machine& w1;
  testing::Machine& client;
  std::string address;  // head IP:port, as its banner printed it
  std::string token;
};

}  // namespace clusterd::bench
