// What each rank of a launch is started with: its program, working folder,
// user and environment (the agent's own, the job's, the torchrun names the
// head sent, the attempt's config file, the interface Gloo and NCCL bind
// to, the node's Python package first on PYTHONPATH, MASTER_PORT), and the
// free ports a launch or the head asks for. RankRunner starts what it plans.
// Not thread-safe: the node agent's loop owns it, with the runner.
#pragma once

#include <string>
#include <vector>

#include "agent.pb.h"
#include "daemon/agent/launcher.h"

namespace clusterd {

class RankSpawnPlanner {
 public:
  struct Options {
    std::string logs_dir;     // where an attempt's config file is written
    std::string socket_path;  // CLUSTER_AGENT_SOCKET for the ranks' report()
    std::string python_path;  // put first on the ranks' PYTHONPATH ("" none)
    std::string node_ip;      // the node's address: its interface, its free ports
    std::string run_as;       // the user ranks run as when their job names none ("": the daemon's own)
  };

  explicit RankSpawnPlanner(Options options);

  // One request per rank of `launch`, in its order, each without its
  // output_fd (the runner's pipe). master_port > 0 is told to every rank.
  std::vector<SpawnRequest> Plan(const LaunchRanks& launch, int master_port);
  // A port free on the node's address now, or 0.
  int FreePort() const;

 private:
  // The network interface of node_ip, for GLOO/NCCL_SOCKET_IFNAME.
  const std::string& NodeInterface();

  Options options_;
  // The agent's own environment, read once (it does not change while the
  // agent runs): most of every rank's (rank_environment.h).
  std::vector<std::string> agent_env_;
  std::string interface_;  // NodeInterface(), once known
  bool empty_config_written_ = false;
};

}  // namespace clusterd
