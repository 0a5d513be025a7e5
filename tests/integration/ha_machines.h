// Heads in HA (docs/HA.md) on simulated machines (machines.h), each
// process on a machine of its own: three etcd members (e1, e2, e3, real
// etcd-server with the short raft timings of docs/HA.md), a radosgw (s3),
// two heads (head-a, head-b: `--ha etcd://...` and `--store s3://...`,
// ranks on none), workers (w1, w2, ...) and a client (client) that runs
// clusterctl; workers and client are given both heads' addresses. For the
// [machines][ha] tests, the failover benchmark and the chaos run.
// Machines share nothing but the network; a test's faults are the
// machines' (KillAll, CutLink), the etcd members' and the heads' own.
// The destructor kills every process (the members, Ceph, then every
// machine through SimNetwork) and removes every namespace and folder.
// Not thread-safe: call it from one thread.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ceph_fixture.h"
#include "etcd_members.h"
#include "harness.h"
#include "machines.h"

namespace clusterd::testing {

struct HaMachinesOptions {
  int workers = 3;
  int worker_cpus = 2;
  // Added to every head's and every worker's `clusterd start`.
  std::vector<std::string> head_flags;
  std::vector<std::string> worker_flags;
};

// Which head leads and since when, as the leader itself reports it.
struct HaLeader {
  int head = -1;                 // index into heads(); -1: none answered as leader
  std::string id;                // its --node-name: head-a, head-b
  int64_t leading_since_unix_ms = 0;  // from `clusterctl status` ("leader for X s"), 0.1 s resolution
};

class HaMachines {
 public:
  static constexpr int kHeads = 2;
  static constexpr int kEtcdMembers = 3;
  static constexpr const char* kBucket = "ha-store";
  static constexpr const char* kToken = "ha-machines-token-0123456789abcdef";

  // Makes the machines and starts everything, the first head (head-a)
  // leading once the second starts. nullptr with *skip_reason set where
  // this cannot run here (not root, no etcd, no Ceph: a test skips);
  // throws std::runtime_error, naming what failed and its output, when a
  // daemon did not start.
  static std::unique_ptr<HaMachines> Start(std::string* skip_reason, const HaMachinesOptions& options = {});
  ~HaMachines();
  HaMachines(const HaMachines&) = delete;
  HaMachines& operator=(const HaMachines&) = delete;

  SimNetwork& net() { return net_; }
  Machine& etcd_machine(int i) { return *etcd_machines_.at(i); }
  Machine& storage() { return *storage_; }
  Machine& head(int i) { return *heads_.at(i); }
  Machine& worker(int i) { return *workers_.at(i); }
  const std::vector<Machine*>& workers() const { return workers_; }
  Machine& client() { return *client_; }
  EtcdMembers& etcd() { return *etcd_; }
  CephFixture& ceph() { return *ceph_; }

  std::string head_id(int i) const { return i == 0 ? "head-a" : "head-b"; }
  std::string head_address(int i) const;  // IP:6379
  std::string heads_address() const;      // both, comma-separated, head-a first
  // etcd://E1:2379,E2:2379,E3:2379/clusterd-ha
  std::string etcd_url() const;
  // What a machine's clusterctl or Python client needs: CLUSTER_ADDRESS
  // (both heads), CLUSTER_TOKEN and the S3 credentials and endpoint.
  std::map<std::string, std::string> ClientEnv() const;

  // clusterctl ARGS on the client, in its folder /tmp/job, given both heads
  // (unless ARGS names --address).
  RunResult Ctl(const std::string& args, std::chrono::milliseconds timeout = std::chrono::seconds(30));
  // A file of the client's /tmp/job (job files, programs).
  void Put(const std::string& name, const std::string& content);

  // The leader, as `clusterctl status` on the client says, asking each
  // head of `heads` (default: both) alone in turn, each call bounded to
  // 1 s (a head whose cable is pulled does not answer), and following a
  // standby's redirect. None when no head answers as leader.
  HaLeader Leader(const std::vector<int>& heads = {0, 1});
  // Polls Leader(heads) until `want` (an index) leads; returns it, or the
  // last answer when `limit` passed.
  HaLeader WaitForLeader(int want, std::chrono::milliseconds limit, const std::vector<int>& heads = {0, 1});

  // `clusterd start --head --ha ...` on head i's machine (after a crash of
  // it or a StopHead too: its state folder is on its disk). Throws when
  // the start fails.
  void StartHead(int i);
  // `clusterd stop` on head i's machine (a leader resigns), `--force` when asked.
  RunResult StopHead(int i, bool force = false);
  // StopHead then StartHead: one step of a rolling restart.
  void RestartHead(int i);

  // A whole-machine crash (Machine::KillAll): for an etcd machine its
  // member is killed first, so that EtcdMembers knows it gone. Not for the
  // radosgw's machine (throws): CephFixture tracks its daemons' pids, and
  // ceph().KillGateway() is its fault.
  void KillMachine(Machine& machine);
  // etcd member i's process alone, killed or started again on its data.
  void KillEtcdMember(int i);
  void RestartEtcdMember(int i);
  // Whether the running members answer a health check (a quorum) within limit.
  bool EtcdHealthy(std::chrono::milliseconds limit) { return etcd_->WaitHealthy(limit); }

  // `clusterd start` of a worker's daemon, given both heads (after a crash
  // of its machine too: its token file is on its disk). Throws when the
  // start fails.
  void StartWorker(Machine& worker);
  // Whether every worker is ALIVE on the leader (clusterctl status --json on the client).
  bool WorkersAlive();
  // The last lines of head i's daemon log, for a failure's message.
  std::string HeadLogTail(int i, size_t lines = 30);

 private:
  HaMachines() = default;
  std::map<std::string, std::string> S3Env() const;
  void WriteToken(Machine& machine);

  HaMachinesOptions options_;
  // Destroyed last: its destructor kills whatever of the machines still runs.
  SimNetwork net_;
  std::vector<Machine*> etcd_machines_;
  Machine* storage_ = nullptr;
  std::vector<Machine*> heads_;
  std::vector<Machine*> workers_;
  Machine* client_ = nullptr;
  std::unique_ptr<CephFixture> ceph_;
  std::unique_ptr<EtcdMembers> etcd_;
};

}  // namespace clusterd::testing
