// The usage history's JSON on the dashboard port (docs/DASHBOARD.md, Usage
// API), read on the head's loop from HeadCore::usage_history():
//   GET /api/usage/nodes/NODE[?since_unix_ms=N]  one node (its id or name,
//       percent-encoded as a path segment):
//       {"node_id", "name", "interval_ms", "cpus", "memory_total_bytes",
//        "gpus", "samples": [{"t_unix_ms", "cpu_load", "memory_used_bytes",
//        "running_ranks", "gpus": [{"index", "utilization", "memory_used_bytes",
//        "memory_total_bytes"}]}]}; 404 naming a node the head does not know
//   GET /api/usage/cluster[?since_unix_ms=N]  the cluster's totals:
//       {"interval_ms", "samples": [{"t_unix_ms", "cpu_load", "cpus",
//        "memory_used_bytes", "memory_total_bytes", "gpu_utilization_mean",
//        "gpu_memory_used_bytes", "gpu_memory_total_bytes", "nodes_alive",
//        "running_ranks"}]}
// Samples are oldest first, those taken after since_unix_ms (strictly), so
// a page polls with the newest time it has. Tokens are the dashboard's
// (any user's token reads them, as /api/status).
#pragma once

#include <string>

#include "daemon/head/head_core.h"
#include "daemon/http/http_server.h"

namespace clusterd {

class UsageApi {
 public:
  // REQUIRES: core outlives this.
  explicit UsageApi(const HeadCore* core) : core_(core) {}

  // Whether `path` (no query) is one of this API's.
  static bool IsPath(const std::string& path);
  // REQUIRES: on the head's loop; IsPath(TargetPath(target)); a GET whose
  // token was checked.
  HttpReply Answer(const std::string& target) const;

 private:
  HttpReply NodeReply(const std::string& id_or_name, int64_t since_unix_ms) const;
  HttpReply ClusterReply(int64_t since_unix_ms) const;

  const HeadCore* core_;
};

}  // namespace clusterd
