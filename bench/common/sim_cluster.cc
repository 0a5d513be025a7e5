#include "sim_cluster.h"

#include <google/protobuf/util/json_util.h>

#include <regex>
#include <set>

namespace clusterd::bench {

using namespace std::chrono_literals;

namespace {

std::vector<testing::Machine*> AddWorkers(testing::SimNetwork& net, const std::vector<std::string>& names) {
  std::vector<testing::Machine*> out;
  for (const std::string& name : names) out.push_back(&net.AddMachine(name));
  return out;
}

}  // namespace

SimCluster::SimCluster(const std::vector<std::string>& worker_names)
    : head(net.AddMachine("head")), workers(AddWorkers(net, worker_names)), client(net.AddMachine("client")) {}

SimCluster::~SimCluster() {
  for (testing::Machine* m : workers) m->Run({"clusterd", "stop", "--force"}, {}, 30s);
  head.Run({"clusterd", "stop", "--force"}, {}, 30s);
}

bool SimCluster::Start(std::string* error, const std::vector<std::string>& worker_flags,
                       const std::vector<std::string>& head_flags) {
  worker_flags_ = worker_flags;
  std::vector<std::string> argv = {"clusterd", "start", "--head", "--num-cpus", "0", "--num-gpus", "0"};
  argv.insert(argv.end(), head_flags.begin(), head_flags.end());
  testing::RunResult started = head.Run(argv);
  if (started.exit_code != 0) {
    *error = "the head did not start: " + started.err + started.out;
    return false;
  }
  // "  CLUSTER_TOKEN=<token> clusterd start --address=<ip:port>"
  static const std::regex join("CLUSTER_TOKEN=(\\S+) clusterd start --address=(\\S+)");
  std::smatch match;
  if (!std::regex_search(started.out, match, join)) {
    *error = "the head's banner names no worker command: " + started.out;
    return false;
  }
  token = match[1];
  address = match[2];
  std::vector<std::string> names;
  for (testing::Machine* w : workers) {
    std::vector<std::string> argv = {"clusterd", "start", "--address=" + address};
    argv.insert(argv.end(), worker_flags_.begin(), worker_flags_.end());
    testing::RunResult worker = w->Run(argv, {{"CLUSTER_TOKEN", token}});
    if (worker.exit_code != 0) {
      *error = w->name() + " did not join: " + worker.err + worker.out;
      return false;
    }
    names.push_back(w->name());
  }
  if (!WaitAlive(names, 20s)) {
    *error = "clusterctl status on the client never listed every worker ALIVE";
    return false;
  }
  return true;
}

bool SimCluster::StartWorker(testing::Machine& worker, std::string* error) {
  std::vector<std::string> argv = {"clusterd", "start", "--address=" + address};
  argv.insert(argv.end(), worker_flags_.begin(), worker_flags_.end());
  testing::RunResult started = worker.Run(argv, {{"CLUSTER_TOKEN", token}});
  if (started.exit_code != 0) {
    *error = worker.name() + " did not join: " + started.err + started.out;
    return false;
  }
  if (!WaitAlive({worker.name()}, 20s)) {
    *error = "clusterctl status never listed " + worker.name() + " ALIVE again";
    return false;
  }
  return true;
}

bool SimCluster::WaitAlive(const std::vector<std::string>& names, std::chrono::milliseconds limit) {
  return testing::WaitFor(
      [&] {
        testing::RunResult result = Ctl({"status", "--json"}, 10s);
        ClusterStatus status;
        if (result.exit_code != 0 || !google::protobuf::util::JsonStringToMessage(result.out, &status).ok()) {
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

std::map<std::string, std::string> SimCluster::ClientEnv() const {
  return {{"CLUSTER_ADDRESS", address}, {"CLUSTER_TOKEN", token}, {"XDG_CACHE_HOME", CacheHome()}};
}

testing::RunResult SimCluster::Ctl(const std::vector<std::string>& args, std::chrono::milliseconds timeout) {
  std::vector<std::string> argv = {"clusterctl"};
  argv.insert(argv.end(), args.begin(), args.end());
  return client.Run(argv, ClientEnv(), timeout);
}

std::optional<JobInfo> SimCluster::Job(const std::string& job_id) {
  testing::RunResult result = Ctl({"job", job_id, "--json"}, 10s);
  JobInfo job;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  if (result.exit_code != 0 || !google::protobuf::util::JsonStringToMessage(result.out, &job, options).ok()) {
    return std::nullopt;
  }
  return job;
}

std::string SimCluster::JobState(const std::string& job_id) {
  std::optional<JobInfo> job = Job(job_id);
  return job ? JobState_Name(job->state()) : "";
}

testing::Machine* SimCluster::Worker(const std::string& name) {
  for (testing::Machine* w : workers) {
    if (w->name() == name) return w;
  }
  return nullptr;
}

}  // namespace clusterd::bench
