// (a) Start-up: from exec of `clusterd start --head` to the head's own node
// ALIVE in GetStatus, polled every few ms while the start command runs.
// Baseline: `clusterd --help`, the cost of exec'ing and dynamically linking
// the same binary, the floor that no start-up can go below.
#include <thread>

#include "harness.h"
#include "head_probe.h"
#include "sections.h"
#include "stats.h"

namespace clusterd::bench {

namespace {

using testing::Cluster;
using testing::RunResult;

// Polls until the node named "head" (harness's name for it) is ALIVE.
bool WaitHeadAlive(const Cluster& cluster, int poll_ms, std::chrono::milliseconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  std::unique_ptr<HeadProbe> probe;
  while (std::chrono::steady_clock::now() < deadline) {
    if (!probe) {
      // The token file appears only once the head holds its port.
      if (auto token = SessionToken(cluster.temp_dir())) probe = std::make_unique<HeadProbe>(cluster.address(), *token);
    }
    ClusterStatus status;
    if (probe && probe->GetStatus(&status, nullptr, std::chrono::milliseconds(500)) &&
        StateOf(status, "head") == ALIVE) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(poll_ms));
  }
  return false;
}

}  // namespace

bool RunStartup(const BenchOptions& options, Report* report) {
  Samples help, alive, start_command, ctl, stop;
  for (int i = 0; i < options.startup_runs; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    if (testing::Run({CLUSTERD_BIN, "--help"}).exit_code != 0) {
      report->Failed("startup", "clusterd --help failed");
      return false;
    }
    help.Add(MsSince(t0));
  }
  for (int i = 0; i < options.startup_runs; ++i) {
    Cluster cluster;  // fresh free port and temp dir; its destructor cleans up
    RunResult started;
    double start_ms = 0;
    auto t0 = std::chrono::steady_clock::now();
    std::thread starter([&] {
      started = cluster.StartHead({"--node-ip-address", "127.0.0.1", "--num-cpus", "1",
                                   "--heartbeat-ms", std::to_string(options.heartbeat_ms),
                                   "--node-timeout-ms", std::to_string(options.node_timeout_ms)});
      start_ms = MsSince(t0);
    });
    bool up = WaitHeadAlive(cluster, options.poll_ms, std::chrono::seconds(15));
    double alive_ms = MsSince(t0);
    starter.join();
    if (!up || started.exit_code != 0) {
      report->Failed("startup", "run " + std::to_string(i) + ": head not ALIVE: " + started.err);
      return false;
    }
    alive.Add(alive_ms);
    start_command.Add(start_ms);
    // What a user sees: clusterctl must agree that the head node is ALIVE.
    auto c0 = std::chrono::steady_clock::now();
    RunResult shown = cluster.Ctl({"status", "--json"});
    ctl.Add(MsSince(c0));
    if (shown.exit_code != 0 || shown.out.find("\"ALIVE\"") == std::string::npos) {
      report->Failed("startup", "clusterctl status does not show the head ALIVE: " + shown.err);
      return false;
    }
    auto s0 = std::chrono::steady_clock::now();
    if (cluster.Stop().exit_code != 0) {
      report->Failed("startup", "clusterd stop failed");
      return false;
    }
    stop.Add(MsSince(s0));
  }
  const std::string floor = "clusterd --help, median";
  report->Check("(a) start --head -> head ALIVE, median (n=" + std::to_string(alive.size()) + ")",
                alive.Median(), "ms", 300, help.Median(), floor);
  report->Check("(a) start --head -> head ALIVE, p99", alive.P99(), "ms", 300, help.P99(), "clusterd --help, p99");
  report->Info("(a) `clusterd start --head` returns, median", start_command.Median(), "ms", help.Median(), floor);
  report->Info("(a) `clusterctl status --json` (1 node), median", ctl.Median(), "ms", help.Median(), floor);
  report->Info("(a) `clusterd stop`, median", stop.Median(), "ms", help.Median(), floor);
  return true;
}

}  // namespace clusterd::bench
