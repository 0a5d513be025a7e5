#include "three_nodes.h"

#include "head_probe.h"

namespace clusterd::bench {

bool StartThreeNodes(int cpus, const std::vector<std::string>& head_flags, ThreeNodes* nodes, std::string* error) {
  std::vector<std::string> flags = {"--node-ip-address", "127.0.0.1", "--num-cpus", std::to_string(cpus)};
  std::vector<std::string> head_only = flags;
  head_only.insert(head_only.end(), head_flags.begin(), head_flags.end());
  testing::RunResult head = nodes->cluster.StartHead(head_only);
  if (head.exit_code != 0) {
    *error = "head did not start: " + head.err;
    return false;
  }
  auto pids = nodes->cluster.DaemonPids();  // only the head's so far
  nodes->head_pid = pids.empty() ? 0 : pids.front();
  for (const char* name : {"w1", "w2"}) {
    testing::RunResult worker = nodes->cluster.StartWorker(name, flags);
    if (worker.exit_code != 0) {
      *error = std::string("worker ") + name + " did not start: " + worker.err;
      return false;
    }
  }
  nodes->daemon_pids = {nodes->head_pid, nodes->cluster.WorkerPid("w1"), nodes->cluster.WorkerPid("w2")};
  auto token = SessionToken(nodes->cluster.temp_dir());
  if (!token) {
    *error = "no session token under " + nodes->cluster.temp_dir();
    return false;
  }
  nodes->token = *token;
  HeadProbe probe(nodes->cluster.address(), nodes->token);
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
