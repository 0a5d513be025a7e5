// The cluster's id in HA: six hex digits that end every job and sweep id
// ("job-12-a1b2c3"), so that ids never repeat across clusters. A single
// head keeps its id in its state folder (head_state_files.h); heads in HA
// share one, kept in etcd under PREFIX/cluster_id, so that the ids minted
// by one leader and the next have the same suffix.
#pragma once

#include <string>

#include "common/status.h"
#include "daemon/ha/etcd_client.h"

namespace clusterd {

// The key under the cluster's prefix.
std::string EtcdClusterIdKey(const std::string& prefix);

// The id kept at PREFIX/cluster_id. The first head to ask creates it as
// `proposed`, in a transaction that writes it only if the key is absent;
// every later ask, by any head, reads that one. An error when etcd cannot
// be reached, or holds a value that is not an id.
Result<std::string> EtcdClusterId(EtcdClient* etcd, const std::string& prefix, const std::string& proposed);

}  // namespace clusterd
