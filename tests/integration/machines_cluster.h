// A clusterd cluster on simulated machines (machines.h) for the machines
// tests: a head and two workers on machines of their own, and a client
// machine that runs clusterctl.
#pragma once

#include <sys/stat.h>

#include <google/protobuf/util/json_util.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cluster.pb.h"
#include "job_json.h"
#include "machines.h"

namespace clusterd::testing {

using namespace std::chrono_literals;

inline std::string Trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

inline bool Exists(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0;
}

// No node is told its address: the head finds its default-route address
// and each worker the local address of its route to the head.
inline std::vector<std::string> NodeIpFlags(const Machine&) { return {}; }

inline std::vector<std::string> With(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// A head that runs no ranks and `workers` of `cpus` CPUs each, started on
// their machines (REQUIREd); returns what reaches the head from any
// machine: CLUSTER_ADDRESS and CLUSTER_TOKEN.
inline std::map<std::string, std::string> StartHeadAndWorkers(Machine& head, const std::vector<Machine*>& workers,
                                                             int cpus, const std::vector<std::string>& head_flags = {}) {
  RunResult head_started = head.Run(
      With({"clusterd", "start", "--head", "--port", "6379", "--num-cpus", "0", "--num-gpus", "0"}, head_flags));
  INFO(head_started.out << head_started.err);
  REQUIRE(head_started.exit_code == 0);
  std::string token;
  std::ifstream(head.HostPath("/tmp/clusterd/session_latest/token")) >> token;
  std::map<std::string, std::string> env = {{"CLUSTER_ADDRESS", head.ip() + ":6379"}, {"CLUSTER_TOKEN", token}};
  for (Machine* w : workers) {
    RunResult started = w->Run({"clusterd", "start", "--address", head.ip() + ":6379", "--num-cpus",
                                std::to_string(cpus)}, env);
    INFO(w->name() << ": " << started.out << started.err);
    REQUIRE(started.exit_code == 0);
  }
  return env;
}

// A head that runs no ranks, `worker_count` workers (w1, w2, ...) of `cpus`
// CPUs each, and a client, each on a machine of its own, in that order,
// started by StartHeadAndWorkers; `env` reaches the head from any machine.
struct HeadWorkersClient {
  HeadWorkersClient(int worker_count, int cpus)
      : head(net.AddMachine("head")),
        workers(AddWorkers(net, worker_count)),
        client(net.AddMachine("client")),
        env(StartHeadAndWorkers(head, workers, cpus)) {}

  // A clean stop of the head's and the workers' daemons.
  void StopDaemons() {
    head.Run({"clusterd", "stop", "--force"});
    for (Machine* w : workers) w->Run({"clusterd", "stop", "--force"});
  }

  SimNetwork net;
  Machine& head;
  std::vector<Machine*> workers;
  Machine& client;
  const std::map<std::string, std::string> env;

 private:
  static std::vector<Machine*> AddWorkers(SimNetwork& net, int count) {
    std::vector<Machine*> workers;
    for (int i = 1; i <= count; ++i) workers.push_back(&net.AddMachine("w" + std::to_string(i)));
    return workers;
  }
};

// A head and two workers on machines of their own, and a client machine
// that runs clusterctl; default timing (heartbeat 0.5 s, node timeout 2 s).
// Node names are the daemons' default: the host name.
struct SimCluster {
  SimNetwork net;
  Machine& head = net.AddMachine("head");
  Machine& w1 = net.AddMachine("w1");
  Machine& w2 = net.AddMachine("w2");
  Machine& client = net.AddMachine("client");
  const int head_cpus;
  std::string token;

  // head_cpus 0: the head runs no ranks, so its machine's crash kills none.
  explicit SimCluster(int head_cpus = 1) : head_cpus(head_cpus) {
    StartHead();
    for (Machine* w : {&w1, &w2}) StartWorker(*w);
  }

  ~SimCluster() {
    // A clean stop; the network's KillAll is the safety net.
    for (Machine* m : {&head, &w1, &w2}) m->Run({"clusterd", "stop", "--force"});
  }

  std::string address() const { return head.ip() + ":6379"; }

  // Also after a crash of the head's machine: its state folder (journal,
  // token) is still on its disk.
  void StartHead() {
    RunResult started = head.Run(With({"clusterd", "start", "--head", "--port", "6379", "--num-cpus",
                                       std::to_string(head_cpus)},
                                      NodeIpFlags(head)));
    INFO(started.out << started.err);
    REQUIRE(started.exit_code == 0);
    // The token exists only on the head, as on real machines.
    token = Trimmed(Slurp(head.HostPath("/tmp/clusterd/session_latest/token")));
    REQUIRE(!token.empty());
  }

  void StartWorker(Machine& w) {
    RunResult started = w.Run(With({"clusterd", "start", "--address", address(), "--token", token, "--num-cpus", "1"},
                                   NodeIpFlags(w)));
    INFO(w.name() << ": " << started.out << started.err);
    REQUIRE(started.exit_code == 0);
  }

  // clusterctl ARGS on the client, in its folder /tmp/job.
  RunResult Ctl(const std::string& args, std::chrono::milliseconds timeout = 30s) {
    return client.Shell("mkdir -p /tmp/job && cd /tmp/job && clusterctl " + args,
                        {{"CLUSTER_ADDRESS", address()}, {"CLUSTER_TOKEN", token}}, timeout);
  }

  // `clusterctl status --json` on the client; nullopt when it fails.
  std::optional<ClusterStatus> Status() {
    RunResult result = client.Run({"clusterctl", "status", "--json", "--address", address(), "--token", token}, {}, 10s);
    ClusterStatus status;
    if (result.exit_code != 0 || !google::protobuf::util::JsonStringToMessage(result.out, &status).ok()) {
      return std::nullopt;
    }
    return status;
  }

  NodeState StateOf(const std::string& name) {
    auto status = Status();
    if (!status) return NODE_STATE_UNSPECIFIED;
    for (const auto& node : status->nodes()) {
      if (node.name() == name) return node.state();
    }
    return NODE_STATE_UNSPECIFIED;
  }

  // Polls slowly: each poll starts clusterctl on a 2-core machine.
  bool WaitForState(const std::string& name, NodeState state, std::chrono::milliseconds limit) {
    return WaitFor([&] { return StateOf(name) == state; }, limit, 100ms);
  }

  // The job once it is final, asked from the client; a call that fails
  // (the head still starting) is asked again. REQUIREs it within `limit`.
  JobInfo WaitUntilFinal(const std::string& id, std::chrono::milliseconds limit) {
    JobInfo job;
    const bool final = WaitFor([&] {
      RunResult shown = Ctl("job " + id + " --json");
      if (shown.exit_code != 0) return false;
      job = ParseJson<JobInfo>(shown);
      return IsFinal(job.state());
    }, limit, 200ms);
    INFO("job " << id << " still " << JobState_Name(job.state()) << ": " << job.reason());
    REQUIRE(final);
    return job;
  }

  // Until both ranks of the job's first attempt run (REQUIREd within 60 s).
  void WaitTwoRanksRunning(const std::string& id) {
    REQUIRE(WaitFor([&] {
      JobInfo job = ParseJson<JobInfo>(Ctl("job " + id + " --json"));
      return job.attempts_size() == 1 && job.attempts(0).ranks_size() == 2 && job.attempts(0).ranks(0).pid() > 0 &&
             job.attempts(0).ranks(1).pid() > 0;
    }, 60s, 200ms));
  }

  // Both workers ALIVE, then `yaml` as job.yaml in the client's /tmp/job.
  void WhenReadyWriteJob(const std::string& yaml) {
    REQUIRE(WaitForState("w1", ALIVE, 10s));
    REQUIRE(WaitForState("w2", ALIVE, 10s));
    REQUIRE(client.Run({"mkdir", "-p", "/tmp/job"}).exit_code == 0);
    std::ofstream(client.HostPath("/tmp/job/job.yaml")) << yaml;
  }
};

}  // namespace clusterd::testing
