// The head's state in Prometheus' text format, for GET /metrics.
#pragma once

#include <string>
#include <vector>

#include "cluster.pb.h"

namespace clusterd {

// Nodes by state, resources total/used, jobs by state, and the latest value
// of every metric each job reported.
std::string FormatPrometheus(const ClusterStatus& status, const std::vector<JobInfo>& jobs,
                             const std::vector<std::pair<std::string, MetricRecord>>& latest_metrics);

}  // namespace clusterd
