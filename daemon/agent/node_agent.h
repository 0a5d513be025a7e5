// A node agent: what one machine offers the cluster. Probes its resources,
// holds the HeadLink, and carries out the head's commands.
// Built like the head: one event loop owns the rank runner (its state, its
// spawning and reaping); the link's reader, the report server, the launch
// preparer and the uploader post onto it and never hold a lock across a
// send or a file read. Thread-safe for Start/Stop from the daemon's main thread.
#pragma once

#include <boost/asio/steady_timer.hpp>
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "cluster.pb.h"
#include "common/clock.h"
#include "common/storage/cluster_storage.h"
#include "common/config.h"
#include "common/status.h"
#include "common/net/tls.h"
#include "common/waitable_clock.h"
#include "daemon/agent/attempt_files.h"
#include "daemon/agent/gpu_probe.h"
#include "daemon/agent/head_link.h"
#include "daemon/agent/launcher.h"
#include "daemon/agent/launcher_wakeup.h"
#include "daemon/agent/launch_prep.h"
#include "daemon/agent/node_agent_options.h"
#include "daemon/agent/package_cache.h"
#include "daemon/agent/rank_zero_results.h"
#include "daemon/agent/results_uploader.h"
#include "daemon/agent/rank_runner.h"
#include "daemon/agent/report_server.h"
#include "daemon/event_loop.h"

namespace clusterd {

class NodeAgent {
 public:
  // on_stop is called (on the link's thread) when the head asks this agent to exit.
  NodeAgent(NodeAgentOptions options, std::function<void(const std::string&)> on_stop);
  ~NodeAgent();

  // Registers with the head; fails with the head's reason or when it cannot be reached.
  // Ranks are stopped (SIGTERM, grace, SIGKILL) by Stop().
  Result<Registered> Start(int timeout_ms);
  // Tells the head this node drains, refuses new launches, stops every
  // rank (SIGTERM, the grace period, SIGKILL) and then kills whatever they
  // left behind, wherever it went; then closes the link. Idempotent.
  // grace_ms: the ranks' grace period, else the configured stop_grace_ms.
  void Stop(std::optional<int> grace_ms = std::nullopt);

 private:
  // How long a stop waits for the store calls under way before cancelling them.
  static constexpr int kTransferGraceMs = 3000;
  // Stops the launch preparer and the uploader, cancelling what hangs (on
  // a head that stopped answering) after kTransferGraceMs (transfer_stop.h).
  void StopTransfers();
  RegisterNode BuildRegistration();
  // On the link's io thread: hands the command to the loop.
  void OnCommand(const HeadMessage& message);
  // On the loop.
  void HandleCommand(const HeadMessage& message);
  // On the loop: the runner's Tick, then removes the files of attempts that are done here (AttemptFiles).
  Micros TickRunner();
  // On the loop: runs the runner's timers and re-arms itself.
  void ArmTick();
  // On the main thread, during Stop: waits (bounded) until fn holds on the loop.
  bool WaitOnLoop(const std::function<bool()>& fn, int limit_ms);
  // Every message the rank runner sends: rank 0's exit may wait for its outputs.
  bool SendFromRunner(const AgentMessage& message);
  void Launch(const LaunchRanks& launch);
  // A report from process `peer`: accepted only from one of this agent's
  // ranks, and recorded as that rank's, whatever the report claims.
  Status ForwardReport(MetricsReport report, pid_t peer);

  NodeAgentOptions options_;
  std::function<void(const std::string&)> on_stop_;
  // Why the head asked this agent to stop (clusterctl stop-node), told
  // back to it as the drain's reason; "" for a local `clusterd stop`.
  std::mutex stop_reason_mutex_;
  std::string stop_reason_;
  RegisterNode registration_;   // resources fixed at start
  const WaitableClock* clock_;
  std::unique_ptr<Launcher> own_launcher_;
  Launcher* launcher_ = nullptr;
  // Declared before what posts onto it, so it is destroyed after them.
  EventLoop loop_{"agent-loop"};
  std::optional<boost::asio::steady_timer> tick_timer_;  // touched only on the loop
  std::optional<LauncherWakeup> launcher_wakeup_;        // loop only
  bool started_ = false;
  // Reports taken from a rank whose checkpoint, if any, is not queued yet.
  std::atomic<int> reports_under_way_{0};
  bool corked_ = false;  // loop only: the link holds this turn's messages until the posted Uncork
  std::atomic<bool> stopped_{false};  // read on the loop (launcher watch), set by Stop()
  // The runner's ranks as of its last tick: set on the loop, read by the
  // heartbeats' thread for NodeUsage.running_ranks.
  std::atomic<int> running_ranks_{0};
  std::unique_ptr<GpuProbe> gpu_probe_;  // before link_, whose heartbeats read it
  std::unique_ptr<HeadLink> link_;
  std::unique_ptr<RankRunner> runner_;
  std::unique_ptr<ReportServer> reports_;
  std::unique_ptr<ClusterStorage> blobs_;
  std::unique_ptr<PackageCache> packages_;
  std::unique_ptr<LaunchPreparer> preparer_;
  std::unique_ptr<ResultsUploader> uploader_;
  std::unique_ptr<RankZeroResults> rank_zero_;
  std::unique_ptr<AttemptFiles> attempt_files_;  // loop only
};

}  // namespace clusterd
