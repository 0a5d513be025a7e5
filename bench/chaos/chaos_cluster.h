// The cluster a chaos run works on, as the run sees it: a client, workers,
// clusterctl, and a head side that is either one head (bench/common's
// SimCluster: head, w1..wN, client) or two heads in HA on three etcd
// members and a radosgw (tests/integration/ha_machines.h, `chaos --ha`).
// The run's loop and checks are the same for both; only what "the head"
// is, how it is killed and restarted, and where the serving head is,
// differ.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cluster.pb.h"
#include "machines.h"

namespace clusterd::testing {
class HaMachines;
}

namespace clusterd::bench {

class ChaosCluster {
 public:
  virtual ~ChaosCluster() = default;

  // Starts every daemon not yet running and waits until every worker is
  // ALIVE. False with the reason in *error.
  virtual bool Start(std::string* error) = 0;
  virtual testing::Machine& client() = 0;
  virtual const std::vector<testing::Machine*>& workers() const = 0;
  // `clusterctl ARGS` on the client, reaching the serving head.
  virtual testing::RunResult Ctl(const std::vector<std::string>& args, std::chrono::milliseconds timeout) = 0;
  // (Re)starts a worker's daemon and waits until it is ALIVE.
  virtual bool StartWorker(testing::Machine& worker, std::string* error) = 0;
  // The serving head's host:port ("" when none serves now), and the token.
  virtual std::string ServingAddress() = 0;
  virtual std::string token() const = 0;

  // The heads' machines (for their logs).
  virtual std::vector<testing::Machine*> HeadMachines() = 0;
  // Every head's clusterd running now, by head machine name.
  virtual std::map<std::string, pid_t> HeadPids() = 0;
  // The single head's state folder as the run sees it (its size is
  // tracked); nullopt in HA, where the state is in etcd.
  virtual std::optional<std::string> StateFolder() = 0;
  // SIGKILL of the serving head's clusterd; false when none was found.
  virtual bool KillServingHead() = 0;
  // `clusterd stop` on the serving head's machine.
  virtual bool StopServingHead(std::string* error) = 0;
  // Starts every head whose clusterd is not running, then waits until one
  // serves. False with the reason in *error.
  virtual bool RestartHeads(std::string* error) = 0;
  // The HA fixture, for the faults only HA has; null for a single head.
  virtual testing::HaMachines* ha() { return nullptr; }

  // A job from `clusterctl job ID --json`; nullopt if unknown.
  std::optional<JobInfo> Job(const std::string& job_id);
  // Waits until every named node is ALIVE in `clusterctl status --json`.
  bool WaitAlive(const std::vector<std::string>& names, std::chrono::milliseconds limit);
};

// A single head (no --ha) and `workers` workers, w1..wN, of `cpus` CPUs
// and no GPU each. Throws when the machines cannot be made.
std::unique_ptr<ChaosCluster> MakeSingleHeadCluster(int workers, int cpus);
// Two heads in HA and `workers` workers of `cpus` CPUs, every daemon
// started; throws when a daemon did not start, nullptr with *skip_reason
// where it cannot run here (no etcd, no Ceph).
std::unique_ptr<ChaosCluster> MakeHaCluster(int workers, int cpus, std::string* skip_reason);

}  // namespace clusterd::bench
