#include "three_nodes.h"

#include "head_probe.h"

namespace clusterd::bench {

bool StartThreeNodes(int cpus, const HeadChoice& head, ThreeNodes* nodes, std::string* error) {
  std::vector<std::string> flags = {"--node-ip-address", "127.0.0.1", "--num-cpus", std::to_string(cpus)};
  std::vector<std::string> head_flags = {"--node-ip-address", "127.0.0.1", "--num-cpus",
                                         head.runs_agent ? std::to_string(cpus) : "0"};
  if (!head.runs_agent) head_flags.insert(head_flags.end(), {"--num-gpus", "0"});
  head_flags.insert(head_flags.end(), head.flags.begin(), head.flags.end());
  testing::RunResult started = nodes->cluster.StartHead(head_flags);
  if (started.exit_code != 0) {
    *error = "head did not start: " + started.err;
    return false;
  }
  auto pids = nodes->cluster.DaemonPids();  // only the head's so far
  nodes->head_pid = pids.empty() ? 0 : pids.front();
  nodes->daemon_pids = {nodes->head_pid};
  auto token = SessionToken(nodes->cluster.temp_dir());
  if (!token) {
    *error = "no session token under " + nodes->cluster.temp_dir();
    return false;
  }
  nodes->token = *token;
  HeadProbe probe(nodes->cluster.address(), nodes->token);
  // A head in HA serves once it leads, which may be after its start
  // command returned; a worker's start does not wait for it.
  ClusterStatus answer;
  if (!testing::WaitFor([&] { return probe.GetStatus(&answer, nullptr, std::chrono::milliseconds(500)); },
                        std::chrono::seconds(15))) {
    *error = "the head never answered GetStatus";
    return false;
  }
  std::vector<std::string> workers = {"w1", "w2"};
  if (!head.runs_agent) workers.insert(workers.begin(), "w0");
  for (const std::string& name : workers) {
    testing::RunResult worker = nodes->cluster.StartWorker(name, flags);
    if (worker.exit_code != 0) {
      *error = "worker " + name + " did not start: " + worker.err;
      return false;
    }
    nodes->daemon_pids.push_back(nodes->cluster.WorkerPid(name));
  }
  bool alive = testing::WaitFor(
      [&] {
        ClusterStatus status;
        return probe.GetStatus(&status, nullptr, std::chrono::milliseconds(500)) &&
               CountInState(status, ALIVE) == 3;
      },
      std::chrono::seconds(15));
  if (!alive) *error = "the head never listed 3 nodes ALIVE";
  return alive;
}

}  // namespace clusterd::bench
