// Durations by name (an RPC method) in fixed buckets, as Prometheus's
// histograms count them: for /metrics' clusterd_rpc_duration_seconds.
// Thread-safe: gRPC's threads observe, the dashboard's thread reads.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace clusterd {

class LatencyHistogram {
 public:
  // Upper bounds in seconds, from a fast local call to a slow page of jobs.
  static constexpr std::array<double, 12> kBounds = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                                     0.05,   0.1,   0.25,   0.5,   1,    5};
  struct Series {
    std::array<uint64_t, kBounds.size()> buckets{};  // not cumulative: [i] counts (bounds[i-1], bounds[i]]
    uint64_t count = 0;                               // every observation, +Inf included
    double sum = 0;
  };

  void Observe(const std::string& name, double seconds);
  std::map<std::string, Series> Snapshot() const;

 private:
  mutable std::mutex mutex_;
  std::map<std::string, Series> series_;
};

// The head's gRPC server observes each unary call here (one server per
// process); /metrics reads it.
LatencyHistogram& RpcLatency();

}  // namespace clusterd
