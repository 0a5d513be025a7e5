// (b) Death detection: a head and one worker "w1"; SIGKILL (the kernel closes
// the worker's socket, the head sees the stream break) or SIGSTOP (the
// socket stays open and silent, only the timeout can tell) the worker, and
// poll GetStatus every few ms until w1 is DEAD. Then bring it back (restart,
// or SIGCONT: the agent re-registers on its own) for the next trial.
#include <signal.h>

#include <random>
#include <thread>

#include "harness.h"
#include "head_probe.h"
#include "sections.h"
#include "stats.h"

namespace clusterd::bench {

namespace {

using testing::Cluster;

constexpr const char* kWorker = "w1";

struct Poller {
  HeadProbe* probe;
  int poll_ms;
  Samples* rtt;  // every GetStatus round trip, the probe's own resolution

  // Milliseconds from t0 until w1 is in `state`; negative on timeout.
  double Until(NodeState state, std::chrono::steady_clock::time_point t0, std::chrono::milliseconds limit) {
    while (std::chrono::steady_clock::now() - t0 < limit) {
      ClusterStatus status;
      auto c0 = std::chrono::steady_clock::now();
      bool ok = probe->GetStatus(&status, nullptr, std::chrono::milliseconds(1000));
      if (ok) rtt->Add(MsSince(c0));
      if (ok && StateOf(status, kWorker) == state) return MsSince(t0);
      std::this_thread::sleep_for(std::chrono::milliseconds(poll_ms));
    }
    return -1;
  }
};

std::vector<std::string> DaemonFlags(const BenchOptions& options) {
  return {"--node-ip-address", "127.0.0.1", "--num-cpus", "1",
          "--heartbeat-ms", std::to_string(options.heartbeat_ms),
          "--node-timeout-ms", std::to_string(options.node_timeout_ms)};
}

}  // namespace

bool RunDeath(const BenchOptions& options, Report* report) {
  Cluster cluster;
  if (cluster.StartHead(DaemonFlags(options)).exit_code != 0 ||
      cluster.StartWorker(kWorker, DaemonFlags(options)).exit_code != 0) {
    report->Failed("death", "could not start a head and a worker");
    return false;
  }
  auto token = SessionToken(cluster.temp_dir());
  if (!token) {
    report->Failed("death", "no session token");
    return false;
  }
  HeadProbe probe(cluster.address(), *token);
  Samples rtt, killed, stopped, restarted, resumed;
  Poller poller{&probe, options.poll_ms, &rtt};
  const auto limit = std::chrono::milliseconds(options.node_timeout_ms * 3);
  // A pause of one heartbeat period plus a random part before each signal:
  // right after (re-)registration the head counts the registration itself
  // as last heard, so signalling then would not land at a random phase of
  // the agent's heartbeat period, and SIGSTOP would not sample its whole
  // detection range (timeout - heartbeat .. timeout).
  std::mt19937 random(12345);
  std::uniform_int_distribution<int> phase(0, options.heartbeat_ms);

  for (int i = 0; i < options.death_trials; ++i) {
    if (poller.Until(ALIVE, std::chrono::steady_clock::now(), limit) < 0) {
      report->Failed("death", "w1 not ALIVE before SIGKILL trial " + std::to_string(i));
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(options.heartbeat_ms + phase(random)));
    auto t0 = std::chrono::steady_clock::now();
    kill(cluster.WorkerPid(kWorker), SIGKILL);
    double dead = poller.Until(DEAD, t0, limit);
    if (dead < 0) {
      report->Failed("death", "w1 not DEAD after SIGKILL, trial " + std::to_string(i));
      return false;
    }
    killed.Add(dead);
    auto r0 = std::chrono::steady_clock::now();
    if (cluster.StartWorker(kWorker, DaemonFlags(options)).exit_code != 0) {
      report->Failed("death", "could not restart w1");
      return false;
    }
    restarted.Add(poller.Until(ALIVE, r0, limit));
  }

  for (int i = 0; i < options.death_trials; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(options.heartbeat_ms + phase(random)));
    pid_t pid = cluster.WorkerPid(kWorker);
    auto t0 = std::chrono::steady_clock::now();
    kill(pid, SIGSTOP);
    double dead = poller.Until(DEAD, t0, limit);
    auto r0 = std::chrono::steady_clock::now();
    kill(pid, SIGCONT);
    if (dead < 0) {
      report->Failed("death", "w1 not DEAD after SIGSTOP, trial " + std::to_string(i));
      return false;
    }
    stopped.Add(dead);
    double back = poller.Until(ALIVE, r0, limit);
    if (back < 0) {
      report->Failed("death", "w1 did not come back after SIGCONT, trial " + std::to_string(i));
      return false;
    }
    resumed.Add(back);
  }

  const double resolution = options.poll_ms + rtt.Median();
  const std::string probe_what = "probe resolution: poll interval + GetStatus median";
  const std::string n = std::to_string(options.death_trials);
  report->Check("(b) SIGKILL -> DEAD, median (n=" + n + ")", killed.Median(), "ms", 100, resolution, probe_what);
  report->Check("(b) SIGKILL -> DEAD, p99", killed.P99(), "ms", 100, resolution, probe_what);
  const double upper = options.node_timeout_ms + options.heartbeat_ms;
  const double lower = options.node_timeout_ms - options.heartbeat_ms;
  const std::string timeout_what = "--node-timeout-ms";
  report->Check("(b) SIGSTOP -> DEAD, median (n=" + n + ")", stopped.Median(), "ms", upper,
                options.node_timeout_ms, timeout_what);
  report->Check("(b) SIGSTOP -> DEAD, p99", stopped.P99(), "ms", upper, options.node_timeout_ms, timeout_what);
  report->Check("(b) SIGSTOP -> DEAD, min (not before timeout - heartbeat)", stopped.Min(), "ms", lower,
                options.node_timeout_ms, timeout_what, /*at_least=*/true);
  report->Info("(b) restart after SIGKILL -> ALIVE, median", restarted.Median(), "ms");
  report->Info("(b) SIGCONT -> ALIVE again, median", resumed.Median(), "ms",
               options.heartbeat_ms, "--heartbeat-ms");
  return true;
}

}  // namespace clusterd::bench
