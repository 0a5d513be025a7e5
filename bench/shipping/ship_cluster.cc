#include "ship_cluster.h"

#include <google/protobuf/util/json_util.h>

#include <regex>

namespace clusterd::bench {

using namespace std::chrono_literals;

ShipCluster::ShipCluster()
    : head(net.AddMachine("head")), w1(net.AddMachine("w1")), client(net.AddMachine("client")) {}

ShipCluster::~ShipCluster() {
  for (testing::Machine* m : {&w1, &head}) m->Run({"clusterd", "stop", "--force"}, {}, 30s);
}

bool ShipCluster::Start(std::string* error) {
  testing::RunResult started = head.Run({"clusterd", "start", "--head", "--num-cpus", "0", "--num-gpus", "0"});
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
  testing::RunResult worker = w1.Run({"clusterd", "start", "--address=" + address}, {{"CLUSTER_TOKEN", token}});
  if (worker.exit_code != 0) {
    *error = "w1 did not join: " + worker.err + worker.out;
    return false;
  }
  bool alive = testing::WaitFor(
      [&] {
        testing::RunResult result = client.Run({"clusterctl", "status", "--json"}, ClientEnv(), 10s);
        ClusterStatus status;
        if (result.exit_code != 0 || !google::protobuf::util::JsonStringToMessage(result.out, &status).ok()) {
          return false;
        }
        for (const auto& node : status.nodes()) {
          if (node.name() == "w1" && node.state() == ALIVE) return true;
        }
        return false;
      },
      20s, 100ms);
  if (!alive) *error = "clusterctl status on the client never listed w1 ALIVE";
  return alive;
}

std::map<std::string, std::string> ShipCluster::ClientEnv() const {
  return {{"CLUSTER_ADDRESS", address}, {"CLUSTER_TOKEN", token}, {"XDG_CACHE_HOME", CacheHome()}};
}

std::string ShipCluster::JobState(const std::string& job_id) {
  testing::RunResult result = client.Run({"clusterctl", "job", job_id, "--json"}, ClientEnv(), 10s);
  JobInfo job;
  if (result.exit_code != 0 || !google::protobuf::util::JsonStringToMessage(result.out, &job).ok()) return "";
  return JobState_Name(job.state());
}

}  // namespace clusterd::bench
