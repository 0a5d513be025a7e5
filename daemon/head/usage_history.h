// The head's usage history: every live node's reported use (CPU load and
// utilization, memory, running ranks, each GPU's use and memory) and the cluster's
// totals, sampled at a fixed interval over a bounded window, so that the
// dashboard can chart the last hour (docs/DASHBOARD.md, Usage API).
//
// Memory is bounded and paid up front: each node the history holds has a
// fixed ring of window / interval samples, made when it is first sampled,
// of (9 + 3 per GPU) bytes a sample (quantised, error bounds in
// usage_history.cc). Every sample of every node belongs to one tick of the
// history's own clock, so a node's ring needs no times: the ticks' times are
// kept once, for all. A node that is not live at a tick has a hole there; a
// node whose last sample has left the window is forgotten.
//
// Plain class over an injected Clock; no sockets, no threads. NOT
// thread-safe: the head's event loop owns it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "cluster.pb.h"
#include "common/clock.h"
#include "common/config.h"
#include "common/status.h"

namespace clusterd {

struct UsageHistorySettings {
  int64_t interval_ms = 10000;
  int64_t window_s = 3600;

  // From usage_history_interval_ms and usage_history_window_s; an error
  // naming the key for a value out of range.
  static Result<UsageHistorySettings> FromConfig(const Config& config);
  bool enabled() const { return window_s > 0; }
  // Samples a ring holds: the window at the interval, at least 1.
  int64_t capacity() const;
};

// One node's sample, as the API shows it (decoded from the ring).
struct NodeUsageSample {
  int64_t t_unix_ms = 0;
  double cpu_load = 0;
  std::optional<double> cpu_utilization;  // 0..1 busy; nullopt: the agent did not measure it
  int64_t memory_used_bytes = 0;
  int running_ranks = 0;
  struct Gpu {
    int index = 0;
    std::optional<double> utilization;  // 0..1; nullopt: the probe did not read it
    int64_t memory_used_bytes = 0;
    int64_t memory_total_bytes = 0;
  };
  std::vector<Gpu> gpus;
};

// The cluster's totals at one tick, over the nodes live then. Exact sums
// of what the nodes reported (not quantised): one per tick for the whole
// cluster costs little.
struct ClusterUsageSample {
  int64_t t_unix_ms = 0;
  double cpu_load = 0;          // sum of the nodes' 1-minute load averages
  double cpus = 0;              // sum of the CPUs the nodes offer
  // 0..1: the busy share of the CPUs of the nodes that measured it, each
  // node weighted by its CPUs; nullopt when none did.
  std::optional<double> cpu_utilization;
  double memory_used_bytes = 0;
  double memory_total_bytes = 0;
  double gpu_utilization_mean = 0;  // over the GPUs whose use was read (0 when none)
  double gpu_memory_used_bytes = 0;
  double gpu_memory_total_bytes = 0;
  int nodes_alive = 0;  // ALIVE or DRAINING: heard from, sampled
  int running_ranks = 0;
};

class UsageHistory {
 public:
  // GPUs of a node kept (the first its usage lists); the cluster's totals
  // count them all.
  static constexpr int kMaxGpusPerNode = 64;

  UsageHistory(const Clock* clock, UsageHistorySettings settings);
  ~UsageHistory();

  const UsageHistorySettings& settings() const { return settings_; }

  // Takes a sample of the nodes `nodes` lists (the node table's, live or
  // not; asked only when a sample is due) when an interval has passed since
  // the last one (the first at once). Returns when the next is due
  // (monotonic micros), 0 when the history is off.
  Micros MaybeSample(const std::function<std::vector<const NodeInfo*>()>& nodes);
  // Takes a sample now, due or not.
  void Sample(const std::vector<const NodeInfo*>& nodes);

  // What the history knows of a node it holds (by id, else by name).
  struct NodeSeries {
    std::string node_id;
    std::string name;
    double cpus = 0;
    int64_t memory_total_bytes = 0;
    int gpus = 0;  // GPUs the node offers
    std::vector<NodeUsageSample> samples;  // oldest first; none where it was not live or had not reported
  };
  // The node's samples taken after `since_unix_ms` (strictly); nullopt
  // when the history holds no node of that id or name.
  std::optional<NodeSeries> Node(const std::string& id_or_name, int64_t since_unix_ms = 0) const;
  // The cluster's samples taken after `since_unix_ms` (strictly), oldest first.
  std::vector<ClusterUsageSample> Cluster(int64_t since_unix_ms = 0) const;

  size_t nodes_held() const { return series_.size(); }
  // Bytes the history holds (rings, the nodes' records, the ticks' times
  // and the cluster's totals), for the budget's arithmetic and its tests.
  size_t MemoryBytes() const;
  // The ring of one node with `gpus` GPUs, bytes.
  size_t RingBytes(int gpus) const;

 private:
  struct Series;
  // The ring slot of tick `tick`, and whether that tick is still in the window.
  size_t Slot(int64_t tick) const { return static_cast<size_t>(tick % capacity_); }
  bool InWindow(int64_t tick) const { return tick >= 0 && tick < ticks_ && ticks_ - tick <= capacity_; }
  // The first tick taken after `since_unix_ms`.
  int64_t FirstTickAfter(int64_t since_unix_ms) const;
  void Record(Series& series, const NodeInfo& node, int64_t tick);

  const Clock* clock_;
  UsageHistorySettings settings_;
  int64_t capacity_;
  int64_t ticks_ = 0;  // ticks taken; tick n lives in slot n % capacity_
  Micros next_due_ = 0;
  std::vector<int64_t> tick_unix_ms_;          // by slot
  std::vector<ClusterUsageSample> cluster_;    // by slot
  std::unordered_map<std::string, std::unique_ptr<Series>> series_;  // by node id
};

}  // namespace clusterd
