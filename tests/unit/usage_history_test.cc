#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "common/resources.h"
#include "daemon/head/usage_history.h"

using namespace clusterd;

namespace {

constexpr int64_t kMiB = 1 << 20;
constexpr int64_t kGiB = int64_t{1} << 30;

NodeInfo Node(const std::string& name, int gpus = 0) {
  NodeInfo node;
  node.set_node_id("id-" + name);
  node.set_name(name);
  node.set_state(ALIVE);
  (*node.mutable_total()->mutable_amounts())[kCpu] = 8;
  (*node.mutable_total()->mutable_amounts())[kMemory] = 32.0 * kGiB;
  if (gpus > 0) (*node.mutable_total()->mutable_amounts())[kGpu] = gpus;
  node.mutable_usage();  // its agent has sent a heartbeat (all zeros until SetUse)
  for (int i = 0; i < gpus; ++i) {
    GpuStatus* gpu = node.mutable_usage()->add_gpus();
    gpu->set_index(i);
    gpu->set_usage_known(true);
    gpu->set_memory_total_bytes(80.0 * kGiB);
  }
  return node;
}

void SetUse(NodeInfo* node, double load, double memory, int ranks) {
  node->mutable_usage()->set_cpu_load(load);
  node->mutable_usage()->set_memory_used_bytes(memory);
  node->mutable_usage()->set_running_ranks(ranks);
}

std::vector<const NodeInfo*> All(const std::vector<NodeInfo>& nodes) {
  std::vector<const NodeInfo*> out;
  for (const NodeInfo& node : nodes) out.push_back(&node);
  return out;
}

UsageHistorySettings Settings(int64_t interval_ms, int64_t window_s) {
  UsageHistorySettings settings;
  settings.interval_ms = interval_ms;
  settings.window_s = window_s;
  return settings;
}

}  // namespace

TEST_CASE("usage history: one sample an interval, the window's worth kept, times from the head's clock",
          "[usage_history]") {
  FakeClock clock;
  UsageHistory history(&clock, Settings(10'000, 60));  // 6 samples
  std::vector<NodeInfo> nodes = {Node("w1")};
  int taken = 0;
  for (int second = 0; second < 100; ++second) {
    SetUse(&nodes[0], second, 0, 0);  // the load says when it was sampled
    const int64_t before = history.Cluster().empty() ? 0 : history.Cluster().back().t_unix_ms;
    Micros due = history.MaybeSample([&] { return All(nodes); });
    if (history.Cluster().back().t_unix_ms != before) ++taken;
    CHECK(due > clock.NowMicros());
    CHECK(due <= clock.NowMicros() + 10'000'000);
    clock.AdvanceMillis(1000);
  }
  CHECK(taken == 10);  // seconds 0, 10, ..., 90
  auto series = history.Node("w1");
  REQUIRE(series);
  REQUIRE(series->samples.size() == 6);
  for (size_t i = 0; i < series->samples.size(); ++i) {
    const int second = 40 + 10 * static_cast<int>(i);
    CHECK(series->samples[i].cpu_load == Approx(second));
    CHECK(series->samples[i].t_unix_ms == FakeClock().UnixMillis() + second * 1000);
  }
  CHECK(history.Cluster().size() == 6);
}

TEST_CASE("usage history: a late tick does not push the later samples back", "[usage_history]") {
  FakeClock clock;
  UsageHistory history(&clock, Settings(10'000, 3600));
  std::vector<NodeInfo> nodes = {Node("w1")};
  history.MaybeSample([&] { return All(nodes); });  // t = 0
  clock.AdvanceMillis(10'400);                      // due at 10 s, ticked at 10.4 s
  CHECK(history.MaybeSample([&] { return All(nodes); }) == FakeClock().NowMicros() + 20'000'000);
}

TEST_CASE("usage history: stored values are within their quantisation bounds, and saturate", "[usage_history]") {
  FakeClock clock;
  UsageHistory history(&clock, Settings(1000, 3600));
  std::mt19937_64 random(44);
  std::uniform_real_distribution<double> unit(0, 1);
  NodeInfo node = Node("w1", 2);
  node.mutable_usage()->mutable_gpus(1)->set_usage_known(false);
  std::vector<NodeUsage> sent;
  for (int i = 0; i < 500; ++i) {
    SetUse(&node, unit(random) * 200, unit(random) * 1024.0 * kGiB, static_cast<int>(unit(random) * 100));
    // Every tenth report without the CPU's busy share, as an agent's first is.
    if (i % 10 == 0) {
      node.mutable_usage()->clear_cpu_utilization();
    } else {
      node.mutable_usage()->set_cpu_utilization(unit(random));
    }
    GpuStatus* gpu = node.mutable_usage()->mutable_gpus(0);
    gpu->set_utilization(unit(random));
    gpu->set_memory_used_bytes(unit(random) * 80.0 * kGiB);
    sent.push_back(node.usage());
    history.Sample({&node});
    clock.AdvanceMillis(1000);
  }
  auto series = history.Node("id-w1");
  REQUIRE(series);
  REQUIRE(series->samples.size() == sent.size());
  for (size_t i = 0; i < sent.size(); ++i) {
    const NodeUsageSample& got = series->samples[i];
    CHECK(std::abs(got.cpu_load - sent[i].cpu_load()) <= 0.005 + 1e-9);
    if (sent[i].has_cpu_utilization()) {
      REQUIRE(got.cpu_utilization);
      CHECK(std::abs(*got.cpu_utilization - sent[i].cpu_utilization()) <= 0.002 + 1e-9);
    } else {
      CHECK_FALSE(got.cpu_utilization);  // unknown stays unknown, not 0
    }
    CHECK(std::abs(got.memory_used_bytes - sent[i].memory_used_bytes()) <= 0.5 * kMiB);
    CHECK(got.running_ranks == sent[i].running_ranks());
    REQUIRE(got.gpus.size() == 2);
    CHECK(got.gpus[0].index == 0);
    REQUIRE(got.gpus[0].utilization);
    CHECK(std::abs(*got.gpus[0].utilization - sent[i].gpus(0).utilization()) <= 0.002 + 1e-9);
    CHECK(std::abs(got.gpus[0].memory_used_bytes - sent[i].gpus(0).memory_used_bytes()) <= 4 * kMiB);
    CHECK(got.gpus[0].memory_total_bytes == 80 * kGiB);
    CHECK_FALSE(got.gpus[1].utilization);  // the probe did not read it
  }
  // Past what the bytes hold: the largest value, not a wrapped one.
  SetUse(&node, 1e6, 1e18, 1 << 20);
  node.mutable_usage()->set_cpu_utilization(7);
  node.mutable_usage()->mutable_gpus(0)->set_utilization(3);
  node.mutable_usage()->mutable_gpus(0)->set_memory_used_bytes(1e15);
  history.Sample({&node});
  const NodeUsageSample last = history.Node("w1")->samples.back();
  CHECK(last.cpu_load == Approx(655.34));
  CHECK(*last.cpu_utilization == 1.0);
  CHECK(last.running_ranks == 65535);
  CHECK(last.memory_used_bytes == int64_t{0xFFFFFFFF} * kMiB);
  CHECK(*last.gpus[0].utilization == 1.0);
  CHECK(last.gpus[0].memory_used_bytes == int64_t{0xFFFF} * 8 * kMiB);
  // Nonsense from an agent (negative, NaN) is 0, never a crash.
  SetUse(&node, -1, std::nan(""), -5);
  node.mutable_usage()->set_cpu_utilization(-0.5);
  history.Sample({&node});
  CHECK(history.Node("w1")->samples.back().cpu_load == 0);
  CHECK(*history.Node("w1")->samples.back().cpu_utilization == 0);
  node.mutable_usage()->set_cpu_utilization(std::nan(""));
  history.Sample({&node});
  CHECK_FALSE(history.Node("w1")->samples.back().cpu_utilization);
  CHECK(history.Node("w1")->samples.back().memory_used_bytes == 0);
}

TEST_CASE("usage history: a node not live has holes, and is forgotten a window after its last sample",
          "[usage_history]") {
  FakeClock clock;
  UsageHistory history(&clock, Settings(10'000, 60));  // 6 samples
  std::vector<NodeInfo> nodes = {Node("w1"), Node("w2")};
  auto tick = [&] {
    history.Sample(All(nodes));
    clock.AdvanceMillis(10'000);
  };
  tick();
  tick();
  nodes[1].set_state(DEAD);
  tick();
  tick();
  nodes[1].set_state(DRAINING);  // heard from again: sampled
  tick();
  auto w2 = history.Node("w2");
  REQUIRE(w2);
  REQUIRE(w2->samples.size() == 3);
  const int64_t t0 = FakeClock().UnixMillis();
  CHECK(w2->samples[0].t_unix_ms == t0);
  CHECK(w2->samples[1].t_unix_ms == t0 + 10'000);
  CHECK(w2->samples[2].t_unix_ms == t0 + 40'000);
  CHECK(history.Cluster()[2].nodes_alive == 1);
  CHECK(history.Cluster()[4].nodes_alive == 2);

  // Gone from the node table (or dead) for a whole window: forgotten.
  nodes.pop_back();
  for (int i = 0; i < 5; ++i) tick();
  CHECK(history.Node("w2"));  // its last sample is the window's oldest
  CHECK(history.nodes_held() == 2);
  tick();
  CHECK_FALSE(history.Node("w2"));
  CHECK_FALSE(history.Node("id-w2"));
  CHECK(history.nodes_held() == 1);
  CHECK(history.Node("w1")->samples.size() == 6);
}

TEST_CASE("usage history: since_unix_ms gives the samples taken after it", "[usage_history]") {
  FakeClock clock;
  UsageHistory history(&clock, Settings(10'000, 3600));
  std::vector<NodeInfo> nodes = {Node("w1")};
  for (int i = 0; i < 5; ++i) {
    history.Sample(All(nodes));
    clock.AdvanceMillis(10'000);
  }
  const int64_t t0 = FakeClock().UnixMillis();
  CHECK(history.Node("w1", t0 + 20'000)->samples.size() == 2);  // 30 s and 40 s
  CHECK(history.Node("w1", t0 + 20'000)->samples.front().t_unix_ms == t0 + 30'000);
  CHECK(history.Node("w1", t0 + 19'999)->samples.size() == 3);
  CHECK(history.Node("w1", t0 + 40'000)->samples.empty());
  CHECK(history.Cluster(t0 + 20'000).size() == 2);
  CHECK(history.Cluster(0).size() == 5);
}

TEST_CASE("usage history: the cluster's totals sum the live nodes, GPU use is the mean of the GPUs read",
          "[usage_history]") {
  FakeClock clock;
  UsageHistory history(&clock, Settings(10'000, 3600));
  std::vector<NodeInfo> nodes = {Node("a", 2), Node("b", 1), Node("dead", 1)};
  SetUse(&nodes[0], 1.5, 4.0 * kGiB, 2);
  SetUse(&nodes[1], 0.5, 2.0 * kGiB, 1);
  SetUse(&nodes[2], 9, 9.0 * kGiB, 9);
  nodes[2].set_state(DEAD);
  // CPU busy share: a's 8 CPUs at 0.25, b's 24 at 0.75: 0.625 over the
  // 32; the dead node's not counted.
  (*nodes[1].mutable_total()->mutable_amounts())[kCpu] = 24;
  nodes[0].mutable_usage()->set_cpu_utilization(0.25);
  nodes[1].mutable_usage()->set_cpu_utilization(0.75);
  nodes[2].mutable_usage()->set_cpu_utilization(0);
  nodes[0].mutable_usage()->mutable_gpus(0)->set_utilization(0.5);
  nodes[0].mutable_usage()->mutable_gpus(0)->set_memory_used_bytes(10.0 * kGiB);
  nodes[0].mutable_usage()->mutable_gpus(1)->set_usage_known(false);  // not in the mean
  nodes[1].mutable_usage()->mutable_gpus(0)->set_utilization(1.0);
  nodes[1].mutable_usage()->mutable_gpus(0)->set_memory_used_bytes(20.0 * kGiB);
  history.Sample(All(nodes));
  auto samples = history.Cluster();
  REQUIRE(samples.size() == 1);
  const ClusterUsageSample& total = samples[0];
  CHECK(total.t_unix_ms == clock.UnixMillis());
  CHECK(total.cpu_load == Approx(2.0));
  CHECK(total.cpus == 32);
  REQUIRE(total.cpu_utilization);
  CHECK(*total.cpu_utilization == Approx(0.625));
  CHECK(total.memory_used_bytes == 6.0 * kGiB);
  CHECK(total.memory_total_bytes == 64.0 * kGiB);
  CHECK(total.gpu_utilization_mean == Approx(0.75));
  CHECK(total.gpu_memory_used_bytes == 30.0 * kGiB);
  CHECK(total.gpu_memory_total_bytes == 160.0 * kGiB);
  CHECK(total.nodes_alive == 2);
  CHECK(total.running_ranks == 3);
  // A node that has not measured it yet is left out of the share, not
  // counted idle; none measured: unknown.
  nodes[0].mutable_usage()->clear_cpu_utilization();
  clock.AdvanceMillis(10'000);
  history.Sample(All(nodes));
  CHECK(*history.Cluster().back().cpu_utilization == Approx(0.75));
  nodes[1].mutable_usage()->clear_cpu_utilization();
  clock.AdvanceMillis(10'000);
  history.Sample(All(nodes));
  CHECK_FALSE(history.Cluster().back().cpu_utilization);
}

TEST_CASE("usage history: a node whose GPUs change keeps its samples, each GPU's under its index",
          "[usage_history]") {
  FakeClock clock;
  UsageHistory history(&clock, Settings(10'000, 3600));
  NodeInfo node = Node("w1", 2);
  node.mutable_usage()->mutable_gpus(1)->set_utilization(0.4);
  history.Sample({&node});
  clock.AdvanceMillis(10'000);
  // GPU 0 gone (a fault took it off the bus), GPU 1 left, GPU 2 new.
  node.mutable_usage()->mutable_gpus()->DeleteSubrange(0, 1);
  GpuStatus* added = node.mutable_usage()->add_gpus();
  added->set_index(2);
  added->set_usage_known(true);
  added->set_utilization(0.8);
  history.Sample({&node});
  auto series = history.Node("w1");
  REQUIRE(series->samples.size() == 2);
  const auto& before = series->samples[0].gpus;
  REQUIRE(before.size() == 2);
  CHECK(before[0].index == 1);
  CHECK(*before[0].utilization == Approx(0.4));
  CHECK(before[1].index == 2);
  CHECK_FALSE(before[1].utilization);
  CHECK(*series->samples[1].gpus[1].utilization == Approx(0.8));
}

TEST_CASE("usage history: memory is a fixed ring per node, (9 + 3 per GPU) bytes a sample", "[usage_history]") {
  FakeClock clock;
  UsageHistory history(&clock, Settings(10'000, 3600));  // the defaults: 360 samples
  CHECK(history.RingBytes(0) == 360 * 9);
  CHECK(history.RingBytes(8) == 360 * 33);
  const size_t empty = history.MemoryBytes();
  std::vector<NodeInfo> nodes;
  for (int i = 0; i < 1000; ++i) nodes.push_back(Node("n" + std::to_string(i), 8));
  history.Sample(All(nodes));
  const size_t first = history.MemoryBytes();
  const double per_node = static_cast<double>(first - empty) / nodes.size();
  CHECK(per_node >= history.RingBytes(8));
  CHECK(per_node <= history.RingBytes(8) + 512);  // the record beside the ring
  // Full from the first sample: an hour of samples costs nothing more.
  for (int i = 0; i < 400; ++i) {
    clock.AdvanceMillis(10'000);
    history.Sample(All(nodes));
  }
  CHECK(history.MemoryBytes() == first);
  // 10,000 such nodes for an hour: what docs/DASHBOARD.md and the config
  // table say, well within the head's 300 MB at 10,000 nodes.
  CHECK(per_node * 10'000 < 125.0 * 1000 * 1000);
}

TEST_CASE("usage history: the config's window and interval are checked, naming the key", "[usage_history]") {
  Config config;
  CHECK(UsageHistorySettings::FromConfig(config).ok());
  CHECK(UsageHistorySettings::FromConfig(config)->capacity() == 360);
  config.usage_history_interval_ms = 50;
  auto refused = UsageHistorySettings::FromConfig(config);
  REQUIRE_FALSE(refused.ok());
  CHECK_THAT(refused.status().message(), Catch::Contains("usage_history_interval_ms"));
  config.usage_history_interval_ms = 100;
  config.usage_history_window_s = 30 * 24 * 3600;
  refused = UsageHistorySettings::FromConfig(config);
  REQUIRE_FALSE(refused.ok());
  CHECK_THAT(refused.status().message(), Catch::Contains("usage_history_window_s"));
  config.usage_history_window_s = 0;  // off: nothing kept
  FakeClock clock;
  UsageHistory off(&clock, *UsageHistorySettings::FromConfig(config));
  NodeInfo node = Node("w1");
  CHECK(off.MaybeSample([&] { return std::vector<const NodeInfo*>{&node}; }) == 0);
  CHECK_FALSE(off.Node("w1"));
  CHECK(off.Cluster().empty());
}

TEST_CASE("usage history: a node listing more GPUs than any machine has costs the ring of kMaxGpusPerNode",
          "[usage_history]") {
  FakeClock clock;
  UsageHistory history(&clock, Settings(10'000, 3600));
  const size_t empty = history.MemoryBytes();
  NodeInfo node = Node("w1", 10'000);  // an agent's word, not checked by the node table
  history.Sample({&node});
  CHECK(history.MemoryBytes() - empty < history.RingBytes(UsageHistory::kMaxGpusPerNode) + 4096);
  auto series = history.Node("w1");
  REQUIRE(series);
  CHECK(series->samples.back().gpus.size() == UsageHistory::kMaxGpusPerNode);
  CHECK(history.Cluster().back().gpu_memory_total_bytes == 10'000 * 80.0 * kGiB);  // the totals count them all
}

TEST_CASE("usage history: a node that has not reported its usage since it registered gets a hole, not zeros",
          "[usage_history]") {
  FakeClock clock;
  UsageHistory history(&clock, Settings(10'000, 60));
  std::vector<NodeInfo> nodes = {Node("w1"), Node("w2")};
  SetUse(&nodes[0], 1.5, 2.0 * kGiB, 1);
  SetUse(&nodes[1], 3.0, 4.0 * kGiB, 2);
  nodes[1].clear_usage();  // registered (again) a moment ago: the table cleared what it said
  history.Sample(All(nodes));
  CHECK(history.Node("id-w2") == std::nullopt);
  REQUIRE(history.Cluster().size() == 1);
  CHECK(history.Cluster()[0].nodes_alive == 1);
  CHECK(history.Cluster()[0].cpu_load == Approx(1.5));

  clock.AdvanceMillis(10'000);
  SetUse(&nodes[1], 3.0, 4.0 * kGiB, 2);  // its first heartbeat
  history.Sample(All(nodes));
  auto w2 = history.Node("id-w2");
  REQUIRE(w2);
  REQUIRE(w2->samples.size() == 1);
  CHECK(w2->samples[0].cpu_load == Approx(3.0));
  CHECK(w2->samples[0].running_ranks == 2);
  CHECK(history.Cluster().back().nodes_alive == 2);
  CHECK(history.Cluster().back().cpu_load == Approx(4.5));

  // Registered again: a hole at that tick, in a series that goes on.
  clock.AdvanceMillis(10'000);
  nodes[1].clear_usage();
  history.Sample(All(nodes));
  w2 = history.Node("id-w2");
  REQUIRE(w2);
  REQUIRE(w2->samples.size() == 1);
  CHECK(history.Cluster().back().nodes_alive == 1);
}
