// (d) Restart with a big journal: a head's state folder holding `finished`
// SUCCEEDED jobs and `pending` INFEASIBLE ones (big_journal.h), then
// `clusterd start --head` until the head's own node is ALIVE and
// `clusterctl status` answers. The head must start, not stop itself
// because its own agent did not register while it replayed.
// Baselines, in the same run: an empty journal, and one 10x smaller.
#include <atomic>
#include <fstream>
#include <thread>

#include "big_journal.h"
#include "harness.h"
#include "head_probe.h"
#include "proc_usage.h"
#include "sections.h"
#include "stats.h"

namespace clusterd::bench {

namespace {

using testing::Cluster;
using testing::RunResult;

struct Restarted {
  double alive_ms = 0;    // exec of start -> own node ALIVE
  double status_ms = 0;   // then one `clusterctl status`
  size_t status_bytes = 0;
  double rss_mib = 0;
  double journal_mib = 0;
  std::string error;      // "" when it started
};

Restarted Restart(const BenchOptions& options, int64_t finished, int64_t pending) {
  Restarted out;
  Cluster cluster;
  const std::string state = cluster.temp_dir() + "/state";
  Status wrote = testing::WriteBigJournal(state, finished, pending);
  if (!wrote.ok()) {
    out.error = "writing the journal: " + wrote.message();
    return out;
  }
  std::ifstream journal(state + "/journal", std::ios::ate | std::ios::binary);
  out.journal_mib = static_cast<double>(journal.tellg()) / (1 << 20);
  RunResult started;
  std::atomic<bool> start_failed{false};
  auto t0 = std::chrono::steady_clock::now();
  std::thread starter([&] {
    started = cluster.StartHead({"--node-ip-address", "127.0.0.1", "--num-cpus", "1", "--heartbeat-ms",
                                 std::to_string(options.heartbeat_ms), "--node-timeout-ms",
                                 std::to_string(options.node_timeout_ms)});
    start_failed = started.exit_code != 0;
  });
  bool up = false;
  std::unique_ptr<HeadProbe> probe;
  // Generous: what is measured is how long it takes, the bound is a hang.
  auto deadline = t0 + std::chrono::seconds(300);
  while (!up && !start_failed && std::chrono::steady_clock::now() < deadline) {
    if (!probe) {
      if (auto token = SessionToken(cluster.temp_dir())) probe = std::make_unique<HeadProbe>(cluster.address(), *token);
    }
    ClusterStatus status;
    up = probe && probe->GetStatus(&status, nullptr, std::chrono::milliseconds(2000)) && StateOf(status, "head") == ALIVE;
    if (!up) std::this_thread::sleep_for(std::chrono::milliseconds(options.poll_ms * 5));
  }
  out.alive_ms = MsSince(t0);
  starter.join();
  if (!up || started.exit_code != 0) {
    out.error = "head not ALIVE: exit " + std::to_string(started.exit_code) + ": " + started.err;
    return out;
  }
  auto c0 = std::chrono::steady_clock::now();
  RunResult shown = cluster.Ctl({"status"});
  out.status_ms = MsSince(c0);
  out.status_bytes = shown.out.size();
  if (shown.exit_code != 0) out.error = "clusterctl status failed: " + shown.err;
  if (auto rss = RssMiB(cluster.HeadPid())) out.rss_mib = *rss;
  cluster.Stop();
  return out;
}

}  // namespace

bool RunRestart(const BenchOptions& options, Report* report) {
  const int64_t finished = options.restart_finished, pending = options.restart_pending;
  const Restarted empty = Restart(options, 0, 0);
  const Restarted tenth = Restart(options, finished / 10, pending / 10);
  const Restarted full = Restart(options, finished, pending);
  for (const Restarted* run : {&empty, &tenth, &full}) {
    if (!run->error.empty()) {
      report->Failed("restart", run->error);
      return false;
    }
  }
  const std::string size = fmt::format("{} finished + {} pending", finished, pending);
  const std::string tenth_what = fmt::format("{} + {}", finished / 10, pending / 10);
  report->Info("(d) journal size, " + size, full.journal_mib, "MiB", tenth.journal_mib, tenth_what);
  report->Info("(d) restart -> head ALIVE, " + size, full.alive_ms, "ms", tenth.alive_ms, tenth_what);
  report->Info("(d) restart -> head ALIVE, empty journal", empty.alive_ms, "ms");
  // Replay is linear in the journal: 10x the jobs may cost about 10x, never
  // the 100x of a walk of the queue per job. Below 20x leaves room for noise.
  report->Check("(d) restart time, 10x the journal: ratio", full.alive_ms / std::max(1.0, tenth.alive_ms), "x", 20,
                std::nullopt, "");
  report->Check("(d) `clusterctl status` after it", full.status_ms, "ms", 1000, empty.status_ms, "empty journal");
  report->Check("(d) `clusterctl status` output", static_cast<double>(full.status_bytes), "bytes", 4096,
                static_cast<double>(empty.status_bytes), "empty journal");
  report->Info("(d) head RSS after it", full.rss_mib, "MiB", tenth.rss_mib, tenth_what);
  return true;
}

}  // namespace clusterd::bench
