// A node agent: what one machine offers the cluster. Probes its resources,
// holds the HeadLink, and carries out the head's commands.
// Thread-safe for Start/Stop from the daemon's main thread.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "cluster.pb.h"
#include "common/blob_client.h"
#include "common/config.h"
#include "common/status.h"
#include "daemon/agent/head_link.h"
#include "daemon/agent/package_cache.h"
#include "daemon/agent/rank_runner.h"
#include "daemon/agent/report_server.h"

namespace clusterd {

struct NodeAgentOptions {
  std::string head_address;
  std::string token;
  std::string node_name;     // empty: the host name
  std::string node_ip;       // the address other nodes reach this one at
  double num_cpus = -1;      // -1: probe
  double num_gpus = -1;      // -1: probe (nvidia-smi); a count gives indexes 0..n-1
  double memory_bytes = -1;  // -1: probe
  ResourceSet custom;
  bool is_head = false;
  Config config;
  std::string session_dir;   // rank logs go to <session>/logs/jobs, rank groups to <session>/ranks
  std::string socket_path;   // the Unix socket ranks report metrics to
  std::string package_dir;   // this machine's cache of code packages (shared by its agents)
  std::string work_dir;      // this agent's jobs' working folders: <work_dir>/<job id>
};

class NodeAgent {
 public:
  // on_stop is called (on the link's thread) when the head asks this agent to exit.
  NodeAgent(NodeAgentOptions options, std::function<void(const std::string&)> on_stop);
  ~NodeAgent();

  // Registers with the head; fails with the head's reason or when it cannot be reached.
  // Ranks are stopped (SIGTERM, grace, SIGKILL) by Stop().
  Result<Registered> Start(int timeout_ms);
  void Stop();

 private:
  RegisterNode BuildRegistration();
  void OnCommand(const HeadMessage& message);
  // Launches that ship code wait here while their package is fetched, off
  // the link's thread, so commands and heartbeats keep flowing meanwhile.
  void PrepareLoop();
  Status ForwardReport(const MetricsReport& report);

  NodeAgentOptions options_;
  std::function<void(const std::string&)> on_stop_;
  RegisterNode registration_;   // resources fixed at start
  std::unique_ptr<HeadLink> link_;
  std::unique_ptr<RankRunner> runner_;
  std::unique_ptr<ReportServer> reports_;
  std::unique_ptr<BlobClient> blobs_;
  std::unique_ptr<PackageCache> packages_;

  std::mutex prepare_mutex_;
  std::condition_variable prepare_wake_;
  std::deque<LaunchRanks> to_prepare_;
  bool prepare_stopping_ = false;
  std::thread preparer_;
};

}  // namespace clusterd
