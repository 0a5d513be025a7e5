// What `clusterctl status` and `clusterctl nodes` print, as `ray status` does.
#pragma once

#include <string>

#include "cluster.pb.h"

namespace clusterd::cli {

// Nodes by state, resources used/total, pending demands.
std::string FormatClusterStatus(const ClusterStatus& status, int64_t now_unix_ms);
// One row per node: name, id, state, address, resources, last heartbeat.
std::string FormatNodeTable(const ClusterStatus& status, int64_t now_unix_ms);
// Compact JSON with the proto field names.
std::string ToJson(const google::protobuf::Message& message);

}  // namespace clusterd::cli
