#include "chaos_cluster.h"

#include <signal.h>

#include <google/protobuf/util/json_util.h>

#include <set>
#include <stdexcept>

#include "ha_machines.h"
#include "proc_marks.h"
#include "sim_cluster.h"

namespace clusterd::bench {

using namespace std::chrono_literals;

std::optional<JobInfo> ChaosCluster::Job(const std::string& job_id) {
  testing::RunResult result = Ctl({"job", job_id, "--json"}, 10s);
  JobInfo job;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  if (result.exit_code != 0 || !google::protobuf::util::JsonStringToMessage(result.out, &job, options).ok()) {
    return std::nullopt;
  }
  return job;
}

bool ChaosCluster::WaitAlive(const std::vector<std::string>& names, std::chrono::milliseconds limit) {
  return testing::WaitFor(
      [&] {
        testing::RunResult result = Ctl({"status", "--json"}, 10s);
        ClusterStatus status;
        google::protobuf::util::JsonParseOptions options;
        options.ignore_unknown_fields = true;
        if (result.exit_code != 0 || !google::protobuf::util::JsonStringToMessage(result.out, &status, options).ok()) {
          return false;
        }
        std::set<std::string> alive;
        for (const auto& node : status.nodes()) {
          if (node.state() == ALIVE) alive.insert(node.name());
        }
        for (const std::string& name : names) {
          if (!alive.count(name)) return false;
        }
        return true;
      },
      limit, 100ms);
}

namespace {

std::vector<std::string> WorkerNames(int workers) {
  std::vector<std::string> names;
  for (int i = 1; i <= workers; ++i) names.push_back("w" + std::to_string(i));
  return names;
}

class SingleHeadCluster : public ChaosCluster {
 public:
  SingleHeadCluster(int workers, int cpus) : c_(WorkerNames(workers)), cpus_(cpus) {}

  bool Start(std::string* error) override {
    return c_.Start(error, {"--num-cpus", std::to_string(cpus_), "--num-gpus", "0"});
  }
  testing::Machine& client() override { return c_.client; }
  const std::vector<testing::Machine*>& workers() const override { return c_.workers; }
  testing::RunResult Ctl(const std::vector<std::string>& args, std::chrono::milliseconds timeout) override {
    return c_.Ctl(args, timeout);
  }
  bool StartWorker(testing::Machine& worker, std::string* error) override { return c_.StartWorker(worker, error); }
  std::string ServingAddress() override { return c_.address; }
  std::string token() const override { return c_.token; }
  std::vector<testing::Machine*> HeadMachines() override { return {&c_.head}; }
  std::map<std::string, pid_t> HeadPids() override {
    std::map<std::string, pid_t> out;
    if (auto pid = ClusterdPid(c_.head)) out[c_.head.name()] = *pid;
    return out;
  }
  std::optional<std::string> StateFolder() override { return c_.head.HostPath("/tmp/state/clusterd"); }
  bool KillServingHead() override {
    auto pid = ClusterdPid(c_.head);
    if (!pid) return false;
    kill(*pid, SIGKILL);
    testing::WaitFor([&] { return !testing::ProcessAlive(*pid); }, 10s, 20ms);
    return true;
  }
  bool StopServingHead(std::string* error) override {
    testing::RunResult stopped = c_.head.Run({"clusterd", "stop"}, {}, 60s);
    if (stopped.exit_code != 0) *error = "clusterd stop failed: " + stopped.err.substr(0, 200);
    return stopped.exit_code == 0;
  }
  bool RestartHeads(std::string* error) override {
    testing::RunResult started =
        c_.head.Run({"clusterd", "start", "--head", "--num-cpus", "0", "--num-gpus", "0"}, {}, 60s);
    // The head keeps its token across restarts: the banner must show the same.
    if (started.exit_code != 0 || started.out.find("CLUSTER_TOKEN=" + c_.token) == std::string::npos) {
      *error = "exit " + std::to_string(started.exit_code) + ": " + (started.err + started.out).substr(0, 300);
      return false;
    }
    return true;
  }

 private:
  SimCluster c_;
  int cpus_;
};

class HaCluster : public ChaosCluster {
 public:
  explicit HaCluster(std::unique_ptr<testing::HaMachines> ha) : ha_(std::move(ha)) {}

  bool Start(std::string* error) override {
    std::vector<std::string> names;
    for (testing::Machine* w : ha_->workers()) names.push_back(w->name());
    if (!WaitAlive(names, 30s)) {
      *error = "not every worker ALIVE on the leader within 30 s of the start";
      return false;
    }
    return true;
  }
  testing::Machine& client() override { return ha_->client(); }
  const std::vector<testing::Machine*>& workers() const override { return ha_->workers(); }
  testing::RunResult Ctl(const std::vector<std::string>& args, std::chrono::milliseconds timeout) override {
    std::string line;
    for (const std::string& arg : args) line += (line.empty() ? "" : " ") + arg;
    return ha_->Ctl(line, timeout);
  }
  bool StartWorker(testing::Machine& worker, std::string* error) override {
    try {
      ha_->StartWorker(worker);
    } catch (const std::exception& e) {
      *error = worker.name() + " did not start: " + e.what();
      return false;
    }
    if (!WaitAlive({worker.name()}, 20s)) {
      *error = "clusterctl status never listed " + worker.name() + " ALIVE again";
      return false;
    }
    return true;
  }
  std::string ServingAddress() override {
    testing::HaLeader leader = ha_->Leader();
    return leader.head < 0 ? "" : ha_->head_address(leader.head);
  }
  std::string token() const override { return testing::HaMachines::kToken; }
  std::vector<testing::Machine*> HeadMachines() override {
    std::vector<testing::Machine*> out;
    for (int i = 0; i < testing::HaMachines::kHeads; ++i) out.push_back(&ha_->head(i));
    return out;
  }
  std::map<std::string, pid_t> HeadPids() override {
    std::map<std::string, pid_t> out;
    for (int i = 0; i < testing::HaMachines::kHeads; ++i) {
      if (auto pid = ClusterdPid(ha_->head(i))) out[ha_->head(i).name()] = *pid;
    }
    return out;
  }
  std::optional<std::string> StateFolder() override { return std::nullopt; }
  bool KillServingHead() override {
    testing::HaLeader leader = ha_->Leader();
    if (leader.head < 0) return false;
    auto pid = ClusterdPid(ha_->head(leader.head));
    if (!pid) return false;
    kill(*pid, SIGKILL);
    testing::WaitFor([&] { return !testing::ProcessAlive(*pid); }, 10s, 20ms);
    return true;
  }
  bool StopServingHead(std::string* error) override {
    testing::HaLeader leader = ha_->Leader();
    if (leader.head < 0) {
      *error = "no head answers as the leader";
      return false;
    }
    testing::RunResult stopped = ha_->StopHead(leader.head);
    if (stopped.exit_code != 0) *error = "clusterd stop failed: " + stopped.err.substr(0, 200);
    return stopped.exit_code == 0;
  }
  bool RestartHeads(std::string* error) override {
    for (int i = 0; i < testing::HaMachines::kHeads; ++i) {
      if (ClusterdPid(ha_->head(i))) continue;
      try {
        ha_->StartHead(i);
      } catch (const std::exception& e) {
        *error = ha_->head_id(i) + " did not start: " + e.what();
        return false;
      }
    }
    if (!testing::WaitFor([&] { return ha_->Leader().head >= 0; }, 30s, 100ms)) {
      testing::RunResult status = Ctl({"status"}, 10s);
      *error = "no head leads within 30 s of the restart; clusterctl status then (exit " +
               std::to_string(status.exit_code) + "): " + (status.out + status.err).substr(0, 600);
      return false;
    }
    return true;
  }
  testing::HaMachines* ha() override { return ha_.get(); }

 private:
  std::unique_ptr<testing::HaMachines> ha_;
};

}  // namespace

std::unique_ptr<ChaosCluster> MakeSingleHeadCluster(int workers, int cpus) {
  return std::make_unique<SingleHeadCluster>(workers, cpus);
}

std::unique_ptr<ChaosCluster> MakeHaCluster(int workers, int cpus, std::string* skip_reason) {
  testing::HaMachinesOptions options;
  options.workers = workers;
  options.worker_cpus = cpus;
  std::unique_ptr<testing::HaMachines> ha = testing::HaMachines::Start(skip_reason, options);
  if (!ha) return nullptr;
  return std::make_unique<HaCluster>(std::move(ha));
}

}  // namespace clusterd::bench
