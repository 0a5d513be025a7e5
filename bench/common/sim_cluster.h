// The benchmarks' simulated cluster on the integration tests' machines
// (tests/integration/machines.h): `head` runs only the head (--num-cpus 0
// --num-gpus 0, no node agent), each worker a node agent joined as the
// head's banner says, `client` no daemon at all: it holds the job's folder
// and runs clusterctl. They share nothing but the network (a bridge) and the
// kernel's clock; each /tmp is private. Used by bench/shipping (one worker)
// and bench/checkpoints (three).
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cluster.pb.h"
#include "machines.h"

namespace clusterd::bench {

class SimCluster {
 public:
  // Makes the machines (head, the workers in order, client); throws when
  // they cannot be made.
  explicit SimCluster(const std::vector<std::string>& worker_names);
  ~SimCluster();  // clusterd stop on the daemons' machines; SimNetwork does the rest

  // Starts the head (plus `head_flags`), then every worker with the
  // CLUSTER_TOKEN=... line the head printed (plus `worker_flags`), and waits
  // until `clusterctl status` on the client lists them all ALIVE. False with
  // the reason in *error.
  bool Start(std::string* error, const std::vector<std::string>& worker_flags = {},
             const std::vector<std::string>& head_flags = {});
  // (Re)starts one worker's daemon (after Machine::KillAll its files are
  // still there) and waits until it is ALIVE again.
  bool StartWorker(testing::Machine& worker, std::string* error);
  // Waits until every named node is ALIVE in `clusterctl status`.
  bool WaitAlive(const std::vector<std::string>& names, std::chrono::milliseconds limit);

  // clusterctl's environment on the client: the head's address and token,
  // and XDG_CACHE_HOME (so the hash cache is at HashCacheDir()).
  std::map<std::string, std::string> ClientEnv() const;
  static std::string CacheHome() { return "/tmp/xdg"; }
  static std::string HashCacheDir() { return CacheHome() + "/clusterd/hashes"; }
  static std::string PackingDir() { return CacheHome() + "/clusterd/packing"; }

  // `clusterctl ARGS` on the client.
  testing::RunResult Ctl(const std::vector<std::string>& args,
                         std::chrono::milliseconds timeout = std::chrono::seconds(30));
  // A job from `clusterctl job ID --json` on the client; nullopt if unknown.
  std::optional<JobInfo> Job(const std::string& job_id);
  // Its state's name ("" if unknown).
  std::string JobState(const std::string& job_id);
  // The worker machine named `name` (a node's name is its host name); null if none.
  testing::Machine* Worker(const std::string& name);

  testing::SimNetwork net;
  testing::Machine& head;
  std::vector<testing::Machine*> workers;
  testing::Machine& client;
  std::string address;  // head IP:port, as its banner printed it
  std::string token;

 private:
  std::vector<std::string> worker_flags_;
};

}  // namespace clusterd::bench
