#include "daemon/head/usage_history.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "common/resources.h"

namespace clusterd {

namespace {

// One sample of one node in its ring, little-endian as the machine is:
//   0  u16 CPU load in hundredths, saturating at 655.34 (error <= 0.005);
//          kNoSample marks a tick at which the node was not live
//   2  u16 running ranks, saturating at 65535
//   4  u32 memory used in MiB (error <= 0.5 MiB)
//   8  u8 CPU utilization in 1/250ths (error <= 0.002), or kUnknownUse
//          when the node's agent did not measure it
//   9  per GPU, 3 bytes: u8 utilization in 1/250ths (error <= 0.002), or
//          kUnknownUse when the probe did not read it; u16 memory used in
//          8 MiB units (error <= 4 MiB, up to 512 GiB a GPU)
// A GPU's total memory and index are the node's, kept once, not per sample.
constexpr size_t kBaseBytes = 9;
constexpr size_t kGpuBytes = 3;
constexpr uint16_t kNoSample = 0xFFFF;
constexpr uint8_t kUnknownUse = 0xFF;
constexpr double kLoadUnit = 0.01;
constexpr int kUseSteps = 250;
constexpr int64_t kMiB = 1 << 20;
constexpr int64_t kGpuMemoryUnit = 8 * kMiB;
// GPUs of a node the history keeps (the first this many its usage lists):
// a node's heartbeat is the agent's word, and a ring is (9 + 3 per GPU) x
// window / interval bytes. The largest machines have 8 or 16.
constexpr int kMaxGpus = UsageHistory::kMaxGpusPerNode;
// A ring longer than this is a window and interval nobody means: a week
// at 1 s is 604,800 samples.
constexpr int64_t kMaxCapacity = 1'000'000;

// `value` rounded to a whole number in [0, max]; NaN and negatives are 0.
uint64_t Quantise(double value, uint64_t max) {
  if (!(value > 0)) return 0;
  double rounded = std::round(value);
  return rounded >= static_cast<double>(max) ? max : static_cast<uint64_t>(rounded);
}

// The node's agent measured its CPU utilization (a NaN is the agent's word too).
bool MeasuredCpu(const NodeUsage& usage) {
  return usage.has_cpu_utilization() && std::isfinite(usage.cpu_utilization());
}

bool IsLive(const NodeInfo& node) { return node.state() == ALIVE || node.state() == DRAINING; }

template <typename T>
void Put(uint8_t* at, T value) {
  std::memcpy(at, &value, sizeof value);
}
template <typename T>
T Get(const uint8_t* at) {
  T value;
  std::memcpy(&value, at, sizeof value);
  return value;
}

}  // namespace

Result<UsageHistorySettings> UsageHistorySettings::FromConfig(const Config& config) {
  UsageHistorySettings settings;
  settings.interval_ms = config.usage_history_interval_ms;
  settings.window_s = config.usage_history_window_s;
  if (settings.interval_ms < 100) {
    return Status::InvalidArgument(
        fmt::format("usage_history_interval_ms is {}: it must be at least 100", settings.interval_ms));
  }
  if (settings.window_s < 0) {
    return Status::InvalidArgument(
        fmt::format("usage_history_window_s is {}: it must be 0 (no history) or more", settings.window_s));
  }
  if (settings.capacity() > kMaxCapacity) {
    return Status::InvalidArgument(fmt::format(
        "usage_history_window_s {} at usage_history_interval_ms {} is {} samples a node: at most {} (a longer "
        "interval or a shorter window)",
        settings.window_s, settings.interval_ms, settings.window_s * 1000 / settings.interval_ms, kMaxCapacity));
  }
  return settings;
}

int64_t UsageHistorySettings::capacity() const {
  if (interval_ms <= 0) return 1;
  return std::max<int64_t>(1, window_s * 1000 / interval_ms);
}

struct UsageHistory::Series {
  std::string node_id;
  std::string name;
  double cpus = 0;
  int64_t memory_total_bytes = 0;
  int gpus_offered = 0;
  std::vector<int32_t> gpu_indexes;        // the GPUs a sample has, in order
  std::vector<int64_t> gpu_memory_total;   // the same order
  int64_t last_sampled = -1;  // tick of its newest sample
  int64_t last_written = -1;  // tick of its newest slot written, sample or hole
  size_t stride = kBaseBytes;
  std::unique_ptr<uint8_t[]> ring;
};

UsageHistory::UsageHistory(const Clock* clock, UsageHistorySettings settings)
    : clock_(clock), settings_(settings), capacity_(settings.enabled() ? settings.capacity() : 0) {
  tick_unix_ms_.assign(static_cast<size_t>(capacity_), 0);
  cluster_.assign(static_cast<size_t>(capacity_), ClusterUsageSample{});
}

UsageHistory::~UsageHistory() = default;

size_t UsageHistory::RingBytes(int gpus) const {
  return static_cast<size_t>(capacity_) * (kBaseBytes + kGpuBytes * static_cast<size_t>(gpus));
}

Micros UsageHistory::MaybeSample(const std::function<std::vector<const NodeInfo*>()>& nodes) {
  if (!settings_.enabled()) return 0;
  const Micros now = clock_->NowMicros();
  if (ticks_ == 0 || now >= next_due_) {
    Sample(nodes());
    // Due an interval after this one was due, so that a late tick does not
    // push every later one back; one far behind starts again from now.
    const Micros interval = settings_.interval_ms * 1000;
    next_due_ = (ticks_ > 1 && now - next_due_ < interval) ? next_due_ + interval : now + interval;
  }
  return next_due_;
}

void UsageHistory::Sample(const std::vector<const NodeInfo*>& nodes) {
  if (!settings_.enabled()) return;
  const int64_t tick = ticks_;
  const size_t slot = Slot(tick);
  ClusterUsageSample total;
  total.t_unix_ms = clock_->UnixMillis();
  int gpus_read = 0;
  double use_sum = 0;
  double cpus_measured = 0, cpus_busy = 0;  // over the nodes that reported their CPU utilization
  for (const NodeInfo* node : nodes) {
    // A node registered since its agent's last heartbeat has said nothing
    // of its usage yet (registering clears it): a sample would chart zeros
    // that were never measured, so it gets a hole, as a node not live does.
    if (!IsLive(*node) || !node->has_usage()) continue;
    auto& series = series_[node->node_id()];
    if (!series) {
      series = std::make_unique<Series>();
      series->node_id = node->node_id();
    }
    Record(*series, *node, tick);
    const NodeUsage& usage = node->usage();
    total.cpu_load += usage.cpu_load();
    total.cpus += series->cpus;  // Record read them from the node's totals
    if (MeasuredCpu(usage)) {
      cpus_measured += series->cpus;
      cpus_busy += series->cpus * std::clamp(usage.cpu_utilization(), 0.0, 1.0);
    }
    total.memory_used_bytes += usage.memory_used_bytes();
    total.memory_total_bytes += static_cast<double>(series->memory_total_bytes);
    total.running_ranks += usage.running_ranks();
    ++total.nodes_alive;
    for (const GpuStatus& gpu : usage.gpus()) {
      if (!gpu.usage_known()) continue;
      ++gpus_read;
      use_sum += gpu.utilization();
      total.gpu_memory_used_bytes += gpu.memory_used_bytes();
      total.gpu_memory_total_bytes += gpu.memory_total_bytes();
    }
  }
  total.gpu_utilization_mean = gpus_read > 0 ? use_sum / gpus_read : 0;
  if (cpus_measured > 0) total.cpu_utilization = cpus_busy / cpus_measured;
  tick_unix_ms_[slot] = total.t_unix_ms;
  cluster_[slot] = total;
  ticks_ = tick + 1;
  // The nodes not live at this tick get a hole; those whose last sample
  // has left the window are forgotten.
  for (auto it = series_.begin(); it != series_.end();) {
    Series& series = *it->second;
    if (series.last_written != tick) {
      Put<uint16_t>(&series.ring[slot * series.stride], kNoSample);
      series.last_written = tick;
    }
    if (!InWindow(series.last_sampled)) {
      it = series_.erase(it);
    } else {
      ++it;
    }
  }
}

void UsageHistory::Record(Series& series, const NodeInfo& node, int64_t tick) {
  const NodeUsage& usage = node.usage();
  series.name = node.name();
  series.cpus = Amount(node.total(), kCpu);
  series.memory_total_bytes = static_cast<int64_t>(Amount(node.total(), kMemory));
  series.gpus_offered = static_cast<int>(Amount(node.total(), kGpu));
  std::vector<int32_t> indexes;
  const int gpus = std::min(usage.gpus_size(), kMaxGpus);
  indexes.reserve(static_cast<size_t>(gpus));
  for (int g = 0; g < gpus; ++g) indexes.push_back(usage.gpus(g).index());
  if (!series.ring || indexes != series.gpu_indexes) {
    // The node's GPUs changed (or this is its first sample): a ring of the
    // new width, the samples kept, each GPU's under its index where it
    // still has one. Rare: a node's GPUs change only when it registers again.
    const size_t stride = kBaseBytes + kGpuBytes * indexes.size();
    auto ring = std::make_unique<uint8_t[]>(static_cast<size_t>(capacity_) * stride);
    for (int64_t slot = 0; slot < capacity_; ++slot) {
      uint8_t* to = &ring[static_cast<size_t>(slot) * stride];
      Put<uint16_t>(to, kNoSample);
      for (size_t g = 0; g < indexes.size(); ++g) {
        Put<uint8_t>(to + kBaseBytes + kGpuBytes * g, kUnknownUse);
        Put<uint16_t>(to + kBaseBytes + kGpuBytes * g + 1, 0);
      }
      if (!series.ring) continue;
      const uint8_t* from = &series.ring[static_cast<size_t>(slot) * series.stride];
      std::memcpy(to, from, kBaseBytes);
      for (size_t g = 0; g < indexes.size(); ++g) {
        auto old = std::find(series.gpu_indexes.begin(), series.gpu_indexes.end(), indexes[g]);
        if (old == series.gpu_indexes.end()) continue;
        std::memcpy(to + kBaseBytes + kGpuBytes * g,
                    from + kBaseBytes + kGpuBytes * static_cast<size_t>(old - series.gpu_indexes.begin()), kGpuBytes);
      }
    }
    std::vector<int64_t> memory_total(indexes.size(), 0);
    for (size_t g = 0; g < indexes.size(); ++g) {
      auto old = std::find(series.gpu_indexes.begin(), series.gpu_indexes.end(), indexes[g]);
      if (old != series.gpu_indexes.end()) memory_total[g] = series.gpu_memory_total[old - series.gpu_indexes.begin()];
    }
    series.ring = std::move(ring);
    series.stride = stride;
    series.gpu_indexes = std::move(indexes);
    series.gpu_memory_total = std::move(memory_total);
  }
  uint8_t* at = &series.ring[Slot(tick) * series.stride];
  Put<uint16_t>(at, static_cast<uint16_t>(Quantise(usage.cpu_load() / kLoadUnit, kNoSample - 1)));
  Put<uint16_t>(at + 2, static_cast<uint16_t>(Quantise(usage.running_ranks(), 0xFFFF)));
  Put<uint32_t>(at + 4, static_cast<uint32_t>(Quantise(usage.memory_used_bytes() / kMiB, 0xFFFFFFFF)));
  Put<uint8_t>(at + 8, MeasuredCpu(usage)
                           ? static_cast<uint8_t>(Quantise(usage.cpu_utilization() * kUseSteps, kUseSteps))
                           : kUnknownUse);
  for (int g = 0; g < gpus; ++g) {
    const GpuStatus& gpu = usage.gpus(g);
    uint8_t* to = at + kBaseBytes + kGpuBytes * static_cast<size_t>(g);
    Put<uint8_t>(to, gpu.usage_known() ? static_cast<uint8_t>(Quantise(gpu.utilization() * kUseSteps, kUseSteps))
                                       : kUnknownUse);
    Put<uint16_t>(to + 1, static_cast<uint16_t>(Quantise(gpu.memory_used_bytes() / kGpuMemoryUnit, 0xFFFF)));
    if (gpu.usage_known()) series.gpu_memory_total[g] = static_cast<int64_t>(gpu.memory_total_bytes());
  }
  series.last_sampled = tick;
  series.last_written = tick;
}

int64_t UsageHistory::FirstTickAfter(int64_t since_unix_ms) const {
  int64_t tick = std::max<int64_t>(0, ticks_ - capacity_);
  while (tick < ticks_ && tick_unix_ms_[Slot(tick)] <= since_unix_ms) ++tick;
  return tick;
}

std::optional<UsageHistory::NodeSeries> UsageHistory::Node(const std::string& id_or_name,
                                                           int64_t since_unix_ms) const {
  const Series* found = nullptr;
  if (auto it = series_.find(id_or_name); it != series_.end()) {
    found = it->second.get();
  } else {
    for (const auto& [id, series] : series_) {
      if (series->name == id_or_name) found = series.get();
    }
  }
  if (!found) return std::nullopt;
  NodeSeries out;
  out.node_id = found->node_id;
  out.name = found->name;
  out.cpus = found->cpus;
  out.memory_total_bytes = found->memory_total_bytes;
  out.gpus = std::max<int>(found->gpus_offered, static_cast<int>(found->gpu_indexes.size()));
  for (int64_t tick = FirstTickAfter(since_unix_ms); tick < ticks_; ++tick) {
    const uint8_t* at = &found->ring[Slot(tick) * found->stride];
    const uint16_t load = Get<uint16_t>(at);
    if (load == kNoSample) continue;
    NodeUsageSample sample;
    sample.t_unix_ms = tick_unix_ms_[Slot(tick)];
    sample.cpu_load = load / 100.0;  // kLoadUnit, divided so that 1.23 prints as 1.23
    sample.running_ranks = Get<uint16_t>(at + 2);
    sample.memory_used_bytes = static_cast<int64_t>(Get<uint32_t>(at + 4)) * kMiB;
    const uint8_t busy = Get<uint8_t>(at + 8);
    if (busy != kUnknownUse) sample.cpu_utilization = static_cast<double>(busy) / kUseSteps;
    for (size_t g = 0; g < found->gpu_indexes.size(); ++g) {
      const uint8_t* gpu = at + kBaseBytes + kGpuBytes * g;
      NodeUsageSample::Gpu shown;
      shown.index = found->gpu_indexes[g];
      const uint8_t use = Get<uint8_t>(gpu);
      if (use != kUnknownUse) shown.utilization = static_cast<double>(use) / kUseSteps;
      shown.memory_used_bytes = static_cast<int64_t>(Get<uint16_t>(gpu + 1)) * kGpuMemoryUnit;
      shown.memory_total_bytes = found->gpu_memory_total[g];
      sample.gpus.push_back(shown);
    }
    out.samples.push_back(std::move(sample));
  }
  return out;
}

std::vector<ClusterUsageSample> UsageHistory::Cluster(int64_t since_unix_ms) const {
  std::vector<ClusterUsageSample> out;
  for (int64_t tick = FirstTickAfter(since_unix_ms); tick < ticks_; ++tick) out.push_back(cluster_[Slot(tick)]);
  return out;
}

size_t UsageHistory::MemoryBytes() const {
  size_t bytes = sizeof(*this) + tick_unix_ms_.capacity() * sizeof(int64_t) +
                 cluster_.capacity() * sizeof(ClusterUsageSample) +
                 series_.bucket_count() * sizeof(void*);
  // A hash node holds the key and the pointer, and malloc rounds up: ~64 bytes.
  constexpr size_t kMapNode = 64;
  for (const auto& [id, series] : series_) {
    bytes += kMapNode + id.capacity() + sizeof(Series) + series->node_id.capacity() + series->name.capacity() +
             series->gpu_indexes.capacity() * sizeof(int32_t) + series->gpu_memory_total.capacity() * sizeof(int64_t) +
             static_cast<size_t>(capacity_) * series->stride;
  }
  return bytes;
}

}  // namespace clusterd
