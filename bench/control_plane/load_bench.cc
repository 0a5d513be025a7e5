// (c) Load: a head with no agent of its own (--num-cpus 0 --num-gpus 0, so
// the node count is exactly the simulated ones) holding `nodes` simulated
// agents' streams at the default heartbeat. Baselines from the same head:
// idle (no streams) for CPU and RSS, and 3 nodes for status latency; the
// load generator's own CPU (this process, client side of the same streams)
// is the yardstick for what the head's side should cost.
// With --ha 1 the head runs in HA (--ha on three real etcd members, --store
// on a radosgw: ha_backing.h), its node records in etcd, and etcd's own
// CPU and writes are measured over registration and over the same window.
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "cli/status_printer.h"
#include "harness.h"
#include "ha_backing.h"
#include "head_probe.h"
#include "node_fleet.h"
#include "test_certs.h"
#include "proc_usage.h"
#include "sections.h"
#include "stats.h"

namespace clusterd::bench {

namespace {

using testing::Cluster;

struct Latency {
  Samples rpc, summary, ctl;
};

// GetStatus from C++ and the whole `clusterctl status` process, `calls` each;
// false when a call fails or the head does not list `alive` ALIVE nodes.
bool MeasureStatus(Cluster& cluster, HeadProbe& probe, int calls, int alive, Latency* out, std::string* error) {
  for (int i = 0; i < calls; ++i) {
    ClusterStatus status;
    auto t0 = std::chrono::steady_clock::now();
    if (!probe.GetStatus(&status, error)) return false;
    out->rpc.Add(MsSince(t0));
    if (CountInState(status, ALIVE) != alive) {
      *error = "head lists " + std::to_string(CountInState(status, ALIVE)) + " ALIVE nodes, expected " +
               std::to_string(alive);
      return false;
    }
  }
  for (int i = 0; i < calls; ++i) {
    ClusterStatus status;
    auto t0 = std::chrono::steady_clock::now();
    if (!probe.GetStatus(&status, error, std::chrono::seconds(5), cli::kNodesListed + 1)) return false;
    out->summary.Add(MsSince(t0));
    if (status.node_counts().alive() != alive) {
      *error = "the summary counts " + std::to_string(status.node_counts().alive()) + " ALIVE nodes, expected " +
               std::to_string(alive);
      return false;
    }
  }
  for (int i = 0; i < calls; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    auto shown = cluster.Ctl({"status"});
    out->ctl.Add(MsSince(t0));
    if (shown.exit_code != 0) {
      *error = "clusterctl status failed: " + shown.err;
      return false;
    }
  }
  return true;
}

// Waits until GetStatus lists `alive` ALIVE nodes.
// The kernel's count of UDP datagrams dropped for a full receive buffer
// (/proc/net/snmp, "Udp: ... RcvbufErrors"), for every socket of this
// network namespace; -1 when it cannot be read.
int64_t UdpReceiveBufferErrors() {
  std::ifstream snmp("/proc/net/snmp");
  std::string names, values;
  while (std::getline(snmp, names) && std::getline(snmp, values)) {
    if (names.rfind("Udp:", 0) != 0) continue;
    std::istringstream n(names), v(values);
    std::string name, value;
    while (n >> name && v >> value) {
      if (name == "RcvbufErrors") return std::stoll(value);
    }
  }
  return -1;
}

bool WaitAlive(HeadProbe& probe, int alive, std::chrono::milliseconds limit) {
  return testing::WaitFor([&] {
    ClusterStatus status;
    return probe.GetStatus(&status) && CountInState(status, ALIVE) == alive;
  }, limit);
}

}  // namespace

bool RunLoad(const BenchOptions& options, Report* report) {
  auto fail = [&](const std::string& why) {
    report->Failed("load", why);
    return false;
  };
  Cluster cluster;
  std::vector<std::string> head_flags = {"--node-ip-address", "127.0.0.1", "--num-cpus", "0", "--num-gpus", "0",
                                         "--heartbeat-ms", std::to_string(options.heartbeat_ms),
                                         "--node-timeout-ms", std::to_string(options.node_timeout_ms)};
  // --tls 1: every stream and call over TLS, the head's certificate made now.
  std::optional<testing::TestCerts> certs;
  TlsConfig tls;
  if (options.tls) {
    certs.emplace();
    if (!certs->error().empty()) return fail(certs->error());
    for (const std::string& flag : certs->HeadFlags()) head_flags.push_back(flag);
    auto loaded = LoadTls("", "", certs->ca());
    if (!loaded.ok()) return fail(loaded.status().message());
    tls = *loaded;
  }
  std::unique_ptr<HaBacking> backing;
  if (options.ha) {
    std::string why;
    backing = HaBacking::Start(&why);
    if (!backing) return fail("cannot start what a head in HA needs: " + why);
    for (const std::string& flag : backing->HeadFlags("load")) head_flags.push_back(flag);
  }
  auto started = cluster.StartHead(head_flags);
  auto pids = cluster.DaemonPids();
  auto token = SessionToken(cluster.temp_dir());
  if (started.exit_code != 0 || pids.size() != 1 || !token) return fail("could not start the head: " + started.err);
  const pid_t head = pids[0];
  HeadProbe probe(cluster.address(), *token, tls);
  const auto window = std::chrono::seconds(options.window_s);

  // Baseline: the idle head, over a window as long as the loaded one.
  CpuWindow idle({head});
  if (!idle.Start()) return fail("cannot read the head's /proc/stat");
  std::this_thread::sleep_for(window);
  if (!idle.Stop()) return fail("the head died while idle");
  auto idle_rss = RssMiB(head);

  FleetOptions fleet_options{cluster.address(), *token, "base", 3, options.heartbeat_ms, options.keepalive_ms, tls};
  NodeFleet few(fleet_options);
  std::string error;
  if (!few.Start(&error)) return fail("3 simulated nodes: " + error);
  if (!few.WaitRegistered(std::chrono::seconds(10)) || !WaitAlive(probe, 3, std::chrono::seconds(10))) {
    return fail("3 simulated nodes did not register");
  }
  Latency small;
  if (!MeasureStatus(cluster, probe, options.status_calls, 3, &small, &error)) return fail("3 nodes: " + error);

  // The rest of the fleet, so that the 3 above stay ALIVE and count too.
  fleet_options.name_prefix = "sim";
  fleet_options.nodes = options.nodes - 3;
  NodeFleet many(fleet_options);
  std::optional<EtcdUsageWindow> etcd_registering;
  if (backing) {
    etcd_registering.emplace(*backing);
    if (!etcd_registering->Start()) return fail("cannot read the etcd members' /proc");
  }
  auto r0 = std::chrono::steady_clock::now();
  if (!many.Start(&error)) return fail(error);
  bool all_registered = many.WaitRegistered(std::chrono::seconds(60));
  double register_ms = MsSince(r0);
  if (!all_registered) return fail(std::to_string(many.registered()) + " of " + std::to_string(fleet_options.nodes) + " registered in 60 s");
  if (!WaitAlive(probe, options.nodes, std::chrono::seconds(10))) {
    ClusterStatus status;
    std::string counts;
    if (probe.GetStatus(&status)) {
      for (NodeState state : {ALIVE, DRAINING, DEAD}) {
        counts += fmt::format(" {} {}", NodeState_Name(state), CountInState(status, state));
      }
    }
    return fail(fmt::format("head does not list every node ALIVE within 10 s:{}; {} streams lost", counts,
                            few.lost() + many.lost()));
  }
  std::this_thread::sleep_for(std::chrono::seconds(1));  // let registration's burst pass
  // The nodes' records reach etcd within ha_etcd_flush_ms of their registration.
  if (etcd_registering && !etcd_registering->Stop()) return fail("an etcd member died during registration");

  CpuWindow loaded({head, getpid()});
  int64_t beats0 = few.heartbeats_sent() + many.heartbeats_sent();
  const int64_t answers0 = few.answers() + many.answers();
  const int64_t overflows0 = UdpReceiveBufferErrors();
  std::optional<EtcdUsageWindow> etcd_window;
  if (backing) {
    etcd_window.emplace(*backing);
    if (!etcd_window->Start()) return fail("cannot read the etcd members' /proc");
  }
  if (!loaded.Start()) return fail("cannot read /proc/stat");
  if (const char* profile = std::getenv("CONTROL_PLANE_PERF")) {
    // The window's profile of the head (call graphs): what to read before
    // changing anything. perf's own cost shows in the head's CPU figure.
    auto perf = testing::Run({"/usr/bin/env", "perf", "record", "-F", "999", "-g", "-p", std::to_string(head), "-o", profile, "--",
                              "sleep", std::to_string(options.window_s)});
    if (perf.exit_code != 0) return fail("perf record exited " + std::to_string(perf.exit_code) + ": " + perf.err);
  } else {
    std::this_thread::sleep_for(window);
  }
  if (!loaded.Stop()) return fail("the head died under load");
  if (etcd_window && !etcd_window->Stop()) return fail("an etcd member died during the window");
  int64_t beats = few.heartbeats_sent() + many.heartbeats_sent() - beats0;
  const int64_t answers = few.answers() + many.answers() - answers0;
  const int64_t overflows = UdpReceiveBufferErrors() - overflows0;
  const int heard_by_datagram = few.heard_by_datagram() + many.heard_by_datagram();
  auto rss = RssMiB(head);
  auto peak = PeakRssMiB(head);

  Latency large;
  if (!MeasureStatus(cluster, probe, options.status_calls, options.nodes, &large, &error)) {
    return fail(std::to_string(options.nodes) + " nodes: " + error);
  }
  // `clusterctl nodes` lists every node, page by page.
  Samples listing;
  for (int i = 0; i < 5; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    auto listed = cluster.Ctl({"nodes"});
    listing.Add(MsSince(t0));
    if (listed.exit_code != 0) return fail("clusterctl nodes failed: " + listed.err);
  }
  ClusterStatus final_status;
  if (!probe.GetStatus(&final_status)) return fail("final GetStatus failed");
  int alive = CountInState(final_status, ALIVE);
  int lost = few.lost() + many.lost();
  many.Stop();
  few.Stop();

  const std::string n = std::to_string(options.nodes);
  const std::string calls = " (n=" + std::to_string(options.status_calls) + ")";
  report->Check("(c) nodes ALIVE in GetStatus with " + n + " streams", alive, "", options.nodes, std::nullopt, "",
                /*at_least=*/true);
  report->Check("(c) streams lost during the run", lost, "", 1, std::nullopt, "");
  report->Info("(c) " + std::to_string(fleet_options.nodes) + " more streams registered in", register_ms, "ms");
  report->Info("(c) heartbeats/s sent by the generator", beats / loaded.WallSeconds(), "",
               1000.0 * options.nodes / options.heartbeat_ms, "nodes x 1000 / heartbeat-ms");
  report->Info("(c) nodes whose heartbeats the head hears as datagrams (the rest: on their streams)",
               heard_by_datagram, "", options.nodes, "nodes");
  report->Info("(c) answers/s from the head (the nodes' signs of life; asked every keepalive-ms)",
               answers / loaded.WallSeconds(), "", 1000.0 * options.nodes / (options.keepalive_ms + options.heartbeat_ms),
               "nodes x 1000 / (keepalive-ms + heartbeat-ms)");
  report->Info("(c) datagrams dropped for a full receive buffer during the window (all UDP here)", overflows, "");
  // The 1,000-node targets, and the throughput issue's for 10,000.
  const bool scale = options.nodes >= 10000;
  report->Check("(c) head CPU, " + n + " streams, " + std::to_string(options.window_s) + " s window", loaded.Percent(0),
                "%", scale ? 25 : 10, idle.Percent(0), "idle head, same window");
  report->Info("(c) load generator CPU (client side of the same streams)", loaded.Percent(1), "%",
               loaded.Percent(0), "head CPU");
  if (etcd_window) {
    const double window_s = etcd_window->WallSeconds();
    report->Info("(c) etcd's CPU, its 3 members together, same window", etcd_window->CpuPercent(), "%",
                 loaded.Percent(0), "head CPU");
    report->Info("(c) etcd's bytes to disk per second (write_bytes, 3 members), same window",
                 etcd_window->BytesToDisk() / window_s, "");
    report->Info("(c) etcd's bytes passed to write() per second (wchar, 3 members), same window",
                 etcd_window->BytesWritten() / window_s, "");
    report->Info("(c) etcd's databases' growth over the window (bbolt files, 3 members), bytes",
                 etcd_window->DbGrowth(), "");
    const std::string what = " while " + std::to_string(fleet_options.nodes) + " nodes registered (and 1 s after)";
    report->Info("(c) etcd's CPU, 3 members" + what + ", CPU seconds", etcd_registering->CpuSeconds(), "s");
    report->Info("(c) etcd's bytes to disk" + what, etcd_registering->BytesToDisk(), "");
    report->Info("(c) etcd's bytes passed to write()" + what, etcd_registering->BytesWritten(), "");
    report->Info("(c) etcd's databases' growth" + what + ", bytes", etcd_registering->DbGrowth(), "");
    report->Info("(c) etcd's databases at the end (3 members)", backing->EtcdDbBytes() / 1048576.0, "MiB");
  }
  report->Check("(c) head RSS (VmRSS), " + n + " streams", rss.value_or(0), "MiB", scale ? 286 : 200, idle_rss,
                "idle head");  // 286 MiB: 300 MB
  report->Info("(c) head peak RSS (VmHWM)", peak.value_or(0), "MiB", idle_rss, "idle head");
  // Every node is what `status --all` and `--json` ask for; at 10,000 the
  // target is on the summary that `clusterctl status` asks for (below).
  if (scale) {
    report->Info("(c) GetStatus RPC listing every node, " + n + " nodes, median" + calls, large.rpc.Median(), "ms",
                 small.rpc.Median(), "3 nodes");
    report->Info("(c) GetStatus RPC listing every node, " + n + " nodes, p99", large.rpc.P99(), "ms", small.rpc.P99(),
                 "3 nodes");
  } else {
    report->Check("(c) GetStatus RPC listing every node, " + n + " nodes, median" + calls, large.rpc.Median(), "ms",
                  100, small.rpc.Median(), "3 nodes");
    report->Check("(c) GetStatus RPC listing every node, " + n + " nodes, p99", large.rpc.P99(), "ms", 100,
                  small.rpc.P99(), "3 nodes");
  }
  report->Info("(c) GetStatus RPC as `clusterctl status` asks (counts, " + std::to_string(cli::kNodesListed + 1) +
               " nodes per state), " + n + " nodes, median" + calls, large.summary.Median(), "ms",
               small.summary.Median(), "3 nodes");
  report->Info("(c) the same, " + n + " nodes, p99", large.summary.P99(), "ms", small.summary.P99(), "3 nodes");
  report->Check("(c) `clusterctl status`, " + n + " nodes, median" + calls, large.ctl.Median(), "ms", 100,
                small.ctl.Median(), "3 nodes");
  report->Check("(c) `clusterctl status`, " + n + " nodes, p99", large.ctl.P99(), "ms", 100, small.ctl.P99(),
                "3 nodes");
  report->Info("(c) `clusterctl nodes` (every node, pages of 1000), " + n + " nodes, median (n=5)", listing.Median(),
               "ms", large.ctl.Median(), "`clusterctl status`");
  return true;
}

}  // namespace clusterd::bench
