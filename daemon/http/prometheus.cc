#include "daemon/http/prometheus.h"

#include <chrono>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "common/job_state.h"

namespace clusterd {

namespace {

// Label values may hold any text; Prometheus wants \, " and newline escaped.
std::string Label(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

// Prometheus spells the odd values NaN, +Inf, -Inf (fmt would say nan, inf).
std::string Value(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  return fmt::format("{}", value);
}

void Family(std::string* out, const char* name, const char* type, const char* help) {
  *out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

const char* NodeStateName(NodeState state) {
  return state == ALIVE ? "ALIVE" : state == DRAINING ? "DRAINING" : "DEAD";
}

std::string NodeLabels(const NodeInfo& node) {
  return fmt::format("node=\"{}\",node_id=\"{}\"", Label(node.name()), Label(node.node_id()));
}

// Per GPU of each node that is not DEAD: its use as the node's GPU probe
// last read it (utilization as a ratio, 0..1, as Prometheus writes
// ratios), and whether the head offers it (1) or keeps it out for a fault (0).
void Gpus(std::string* out, const ClusterStatus& status) {
  std::string utilization, memory, healthy;
  for (const auto& node : status.nodes()) {
    if (node.state() == DEAD) continue;
    std::map<int, const GpuStatus*> read;
    for (const GpuStatus& gpu : node.usage().gpus()) {
      if (gpu.usage_known()) read[gpu.index()] = &gpu;
    }
    for (int index : node.gpu_indexes()) {
      const std::string labels = fmt::format("{},gpu=\"{}\"", NodeLabels(node), index);
      bool bad = false;
      for (const GpuStatus& out_gpu : node.bad_gpus()) bad = bad || out_gpu.index() == index;
      healthy += fmt::format("clusterd_gpu_healthy{{{}}} {}\n", labels, bad ? 0 : 1);
      auto gpu = read.find(index);
      if (gpu == read.end()) continue;
      utilization += fmt::format("clusterd_gpu_utilization{{{}}} {}\n", labels, Value(gpu->second->utilization()));
      memory += fmt::format("clusterd_gpu_memory_used_bytes{{{}}} {}\n", labels,
                            Value(gpu->second->memory_used_bytes()));
    }
  }
  Family(out, "clusterd_gpu_utilization", "gauge",
         "Share of the last sample period a kernel ran on each GPU (0..1), as nvidia-smi last read it.");
  *out += utilization;
  Family(out, "clusterd_gpu_memory_used_bytes", "gauge", "GPU memory in use on each GPU, as nvidia-smi last read it.");
  *out += memory;
  Family(out, "clusterd_gpu_healthy", "gauge",
         "1 while the head offers the GPU, 0 while it is out for a fault until clusterctl node NODE --reset-gpu N.");
  *out += healthy;
}

void Nodes(std::string* out, const ClusterStatus& status, int64_t now_unix_ms) {
  std::map<std::string, int> nodes = {{"ALIVE", 0}, {"DRAINING", 0}, {"DEAD", 0}};
  for (const auto& node : status.nodes()) ++nodes[NodeStateName(node.state())];
  Family(out, "clusterd_nodes", "gauge", "Nodes by state.");
  for (const auto& [state, count] : nodes) *out += fmt::format("clusterd_nodes{{state=\"{}\"}} {}\n", state, count);

  Family(out, "clusterd_node_resource_capacity", "gauge", "What each node that is not DEAD offers, by resource.");
  std::string used;
  for (const auto& node : status.nodes()) {
    if (node.state() == DEAD) continue;
    std::map<std::string, double> total(node.total().amounts().begin(), node.total().amounts().end());
    for (const auto& [name, value] : total) {
      auto available = node.available().amounts().find(name);
      double free = available == node.available().amounts().end() ? 0.0 : available->second;
      *out += fmt::format("clusterd_node_resource_capacity{{{},resource=\"{}\"}} {}\n", NodeLabels(node), Label(name),
                          Value(value));
      used += fmt::format("clusterd_node_resource_used{{{},resource=\"{}\"}} {}\n", NodeLabels(node), Label(name),
                          Value(value - free));
    }
  }
  Family(out, "clusterd_node_resource_used", "gauge", "What running ranks hold on each node, by resource.");
  *out += used;

  Gpus(out, status);

  Family(out, "clusterd_heartbeat_age_seconds", "gauge", "Seconds since the head last heard from each node.");
  for (const auto& node : status.nodes()) {
    if (node.last_heartbeat_unix_ms() <= 0) continue;
    *out += fmt::format("clusterd_heartbeat_age_seconds{{{}}} {}\n", NodeLabels(node),
                        Value((now_unix_ms - node.last_heartbeat_unix_ms()) / 1000.0));
  }
}

void Jobs(std::string* out, const JobTally& jobs,
          const std::vector<std::pair<std::string, MetricRecord>>& latest_metrics) {
  std::map<std::string, int64_t> by_state;
  for (JobState s : {PENDING, RUNNING, RESTARTING, SUCCEEDED, FAILED, STOPPED, INFEASIBLE}) by_state[JobStateName(s)] = 0;
  for (const auto& [state, count] : jobs.by_state) by_state[JobStateName(state)] += count;
  Family(out, "clusterd_jobs", "gauge", "Jobs by state.");
  for (const auto& [state, count] : by_state) *out += fmt::format("clusterd_jobs{{state=\"{}\"}} {}\n", state, count);
  // A gauge: deleted and retired jobs take their attempts with them, and a
  // counter that went down would read to Prometheus as a reset. Gauges carry
  // no _total suffix, which Prometheus keeps for counters.
  Family(out, "clusterd_job_attempts", "gauge", "Attempts started, summed over the jobs the head keeps.");
  *out += fmt::format("clusterd_job_attempts {}\n", jobs.attempts);
  // A counter: the head counts each preemption once and never lowers it
  // (deleted jobs keep theirs in it); a restarted head starts from what its
  // jobs' records hold.
  Family(out, "clusterd_preemptions_total", "counter",
         "Running jobs preempted to make room for a higher-priority or within-quota job.");
  *out += fmt::format("clusterd_preemptions_total {}\n", jobs.preemptions);

  Family(out, "clusterd_job_metric", "gauge", "The latest value each job's rank 0 reported, by metric name.");
  for (const auto& [job_id, record] : latest_metrics) {
    std::map<std::string, double> values(record.values().begin(), record.values().end());
    for (const auto& [name, value] : values) {
      *out += fmt::format("clusterd_job_metric{{job=\"{}\",name=\"{}\"}} {}\n", Label(job_id), Label(name),
                          Value(value));
    }
  }
}

void Rpcs(std::string* out, const std::map<std::string, LatencyHistogram::Series>& rpc) {
  Family(out, "clusterd_rpc_duration_seconds", "histogram", "Time the head took to answer each unary gRPC call.");
  for (const auto& [method, series] : rpc) {
    uint64_t cumulative = 0;
    for (size_t i = 0; i < LatencyHistogram::kBounds.size(); ++i) {
      cumulative += series.buckets[i];
      *out += fmt::format("clusterd_rpc_duration_seconds_bucket{{method=\"{}\",le=\"{}\"}} {}\n", Label(method),
                          LatencyHistogram::kBounds[i], cumulative);
    }
    *out += fmt::format("clusterd_rpc_duration_seconds_bucket{{method=\"{}\",le=\"+Inf\"}} {}\n", Label(method),
                        series.count);
    *out += fmt::format("clusterd_rpc_duration_seconds_sum{{method=\"{}\"}} {}\n", Label(method), Value(series.sum));
    *out += fmt::format("clusterd_rpc_duration_seconds_count{{method=\"{}\"}} {}\n", Label(method), series.count);
  }
}

}  // namespace

std::string FormatPrometheus(const ClusterStatus& status, const JobTally& jobs,
                             const std::vector<std::pair<std::string, MetricRecord>>& latest_metrics,
                             int64_t now_unix_ms, const std::map<std::string, LatencyHistogram::Series>& rpc) {
  std::string out;
  Nodes(&out, status, now_unix_ms);
  Jobs(&out, jobs, latest_metrics);
  Rpcs(&out, rpc);
  return out;
}

std::string FormatPrometheus(const ClusterStatus& status, const JobTally& jobs,
                             const std::vector<std::pair<std::string, MetricRecord>>& latest_metrics) {
  int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                    std::chrono::system_clock::now().time_since_epoch()).count();
  return FormatPrometheus(status, jobs, latest_metrics, now, RpcLatency().Snapshot());
}

}  // namespace clusterd
