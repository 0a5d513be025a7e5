// The head's state in Prometheus's text format (exposition 0.0.4), for
// GET /metrics:
//   clusterd_nodes{state}                                 gauge
//   clusterd_node_resource_capacity{node,node_id,resource} gauge (nodes not DEAD)
//   clusterd_node_resource_used{node,node_id,resource}    gauge (total - available)
//   clusterd_heartbeat_age_seconds{node,node_id}          gauge
//   clusterd_jobs{state}                                  gauge
//   clusterd_job_attempts                                 gauge (attempts started, summed over the jobs kept)
//   clusterd_job_metric{job,name}                         gauge (rank 0's latest report)
//   clusterd_rpc_duration_seconds{method}                 histogram (unary gRPC calls to the head)
// `job` in clusterd_job_metric is the training job; scrape with
// honor_labels: true (packaging/prometheus.yml) so Prometheus keeps it.
// node_id is there because two nodes may share a name (a machine that
// rejoined), and a scrape with two identical series is refused whole.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "cluster.pb.h"
#include "common/job_state.h"
#include "common/latency_histogram.h"

namespace clusterd {

std::string FormatPrometheus(const ClusterStatus& status, const JobTally& jobs,
                             const std::vector<std::pair<std::string, MetricRecord>>& latest_metrics,
                             int64_t now_unix_ms, const std::map<std::string, LatencyHistogram::Series>& rpc);

// The same, at the system clock's now, with this process's RpcLatency().
std::string FormatPrometheus(const ClusterStatus& status, const JobTally& jobs,
                             const std::vector<std::pair<std::string, MetricRecord>>& latest_metrics);

}  // namespace clusterd
