// (e) The usage history at scale: the head's own NodeTable with
// `usage_nodes` registered nodes of `usage_gpus` GPUs each, every one with
// a heartbeat's usage, and the head's UsageHistory at the defaults
// (usage_history_interval_ms, usage_history_window_s) sampling it as
// HeadCore::Tick does, on a fake clock, for a whole window. In process:
// what one sampling pass costs is CPU time on the head's loop, measured
// here without a fleet's noise around it. Baselines in the same run: the
// same nodes without GPUs (memory), and a tenth of the nodes (CPU).
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <random>
#include <vector>

#include <fmt/format.h>

#include "common/clock.h"
#include "common/config.h"
#include "common/logging.h"
#include "common/resources.h"
#include "daemon/head/node_table.h"
#include "daemon/head/usage_history.h"
#include "proc_usage.h"
#include "sections.h"
#include "stats.h"

namespace clusterd::bench {

namespace {

double ThreadCpuMs() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) * 1e3 + static_cast<double>(now.tv_nsec) / 1e6;
}

struct UsageRun {
  double history_mib = 0;      // UsageHistory::MemoryBytes after the first sample
  double rss_growth_mib = 0;   // this process's VmRSS over the same
  double bytes_per_node = 0;   // MemoryBytes per node held
  Samples pass_cpu_ms;         // CPU of one sampling pass (the node table's listing included)
  size_t samples_kept = 0;     // of the first node, after the window
  std::string error;
};

// `nodes` nodes of `gpus` GPUs in a NodeTable, sampled for a window and a bit.
UsageRun Measure(int nodes, int gpus) {
  UsageRun out;
  FakeClock clock;
  NodeTable table(&clock, /*node_timeout=*/int64_t{1} << 50);
  std::mt19937_64 random(44);
  std::uniform_real_distribution<double> unit(0, 1);
  for (int i = 0; i < nodes; ++i) {
    RegisterNode node;
    node.set_name(fmt::format("sim-{:05}", i));
    node.set_name_given(true);
    node.set_address("10.0.0.1");
    node.set_instance_id(node.name() + "-instance");
    (*node.mutable_total()->mutable_amounts())[kCpu] = 64;
    (*node.mutable_total()->mutable_amounts())[kMemory] = 512.0 * (1 << 30);
    if (gpus > 0) (*node.mutable_total()->mutable_amounts())[kGpu] = gpus;
    for (int g = 0; g < gpus; ++g) node.add_gpu_indexes(g);
    auto registered = table.Register(node);
    if (!registered.ok()) {
      out.error = "registering " + node.name() + ": " + registered.status().message();
      return out;
    }
    NodeUsage usage;
    usage.set_cpu_load(unit(random) * 64);
    usage.set_cpu_utilization(unit(random));
    usage.set_memory_used_bytes(unit(random) * 512.0 * (1 << 30));
    usage.set_running_ranks(static_cast<int>(unit(random) * 8));
    for (int g = 0; g < gpus; ++g) {
      GpuStatus* gpu = usage.add_gpus();
      gpu->set_index(g);
      gpu->set_usage_known(true);
      gpu->set_utilization(unit(random));
      gpu->set_memory_used_bytes(unit(random) * 80.0 * (1 << 30));
      gpu->set_memory_total_bytes(80.0 * (1 << 30));
    }
    Status heard = table.Heartbeat((*registered)->node_id(), (*registered)->incarnation(), usage);
    if (!heard.ok()) {
      out.error = "heartbeat of " + node.name() + ": " + heard.message();
      return out;
    }
  }
  auto settings = UsageHistorySettings::FromConfig(Config{});
  if (!settings.ok()) {
    out.error = settings.status().message();
    return out;
  }
  const auto rss_before = RssMiB(getpid());
  UsageHistory history(&clock, *settings);
  // A window's worth of passes and a few more, each as Tick takes it: the
  // node table's listing, then the sample.
  const int64_t passes = settings->capacity() + 10;
  for (int64_t pass = 0; pass < passes; ++pass) {
    const double cpu0 = ThreadCpuMs();
    history.MaybeSample([&] { return table.Nodes(); });
    out.pass_cpu_ms.Add(ThreadCpuMs() - cpu0);
    if (pass == 0) {
      const auto rss_after = RssMiB(getpid());
      out.history_mib = static_cast<double>(history.MemoryBytes()) / (1 << 20);
      out.bytes_per_node = static_cast<double>(history.MemoryBytes()) / std::max<size_t>(1, history.nodes_held());
      if (rss_before && rss_after) out.rss_growth_mib = *rss_after - *rss_before;
    }
    clock.AdvanceMillis(settings->interval_ms);
  }
  if (static_cast<double>(history.MemoryBytes()) / (1 << 20) != out.history_mib) {
    out.error = "the history grew after its first sample";
  }
  auto first = history.Node("sim-00000");
  out.samples_kept = first ? first->samples.size() : 0;
  return out;
}

}  // namespace

bool RunUsage(const BenchOptions& options, Report* report) {
  const int nodes = options.usage_nodes;
  const int gpus = options.usage_gpus;
  // The node table logs each registration: tens of thousands of lines here.
  SetLogLevel(LogLevel::kWarning);
  const UsageRun full = Measure(nodes, gpus);
  const UsageRun no_gpus = Measure(nodes, 0);
  const UsageRun tenth = Measure(std::max(1, nodes / 10), gpus);
  SetLogLevel(LogLevel::kInfo);
  for (const UsageRun* run : {&full, &no_gpus, &tenth}) {
    if (!run->error.empty()) {
      report->Failed("usage", run->error);
      return false;
    }
  }
  const UsageHistorySettings defaults = UsageHistorySettings::FromConfig(Config{}).value_or(UsageHistorySettings{});
  const std::string n = std::to_string(nodes);
  const std::string shape = fmt::format("{} nodes x {} GPUs", n, gpus);
  const std::string hour = fmt::format("{} s at {} ms", defaults.window_s, defaults.interval_ms);
  report->Info("(e) usage history: samples a node keeps (" + hour + ")", static_cast<double>(full.samples_kept), "",
               static_cast<double>(defaults.capacity()), "window / interval");
  report->Info(fmt::format("(e) usage history: bytes a node holds, {} GPUs, {}", gpus, hour),
               full.bytes_per_node / 1024, "KiB", no_gpus.bytes_per_node / 1024, "no GPUs");
  // The head's budget at 10,000 nodes is 300 MB (286 MiB, the RSS target of
  // (c)); the head without the history measured ~60 MiB there.
  report->Check("(e) usage history memory, " + shape + ", " + hour, full.history_mib, "MiB", 200,
                no_gpus.history_mib, "no GPUs");
  report->Info("(e) this process's RSS growth for it", full.rss_growth_mib, "MiB", full.history_mib,
               "the history's own count");
  const double interval_ms = static_cast<double>(defaults.interval_ms);
  report->Info("(e) one sampling pass, " + shape + ", CPU median (n=" + std::to_string(full.pass_cpu_ms.size()) + ")",
               full.pass_cpu_ms.Median(), "ms", tenth.pass_cpu_ms.Median(),
               std::to_string(std::max(1, nodes / 10)) + " nodes");
  report->Info("(e) the same, p99", full.pass_cpu_ms.P99(), "ms", tenth.pass_cpu_ms.P99(),
               std::to_string(std::max(1, nodes / 10)) + " nodes");
  // What sampling costs the head's loop, as % of one core: one pass an interval.
  report->Check("(e) head CPU for the usage history, " + shape + ", one pass every " +
                    std::to_string(defaults.interval_ms) + " ms",
                full.pass_cpu_ms.Median() / interval_ms * 100, "%", 1, tenth.pass_cpu_ms.Median() / interval_ms * 100,
                std::to_string(std::max(1, nodes / 10)) + " nodes");
  return true;
}

}  // namespace clusterd::bench
