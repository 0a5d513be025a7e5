// What `clusterctl status` and `clusterctl nodes` print, as `ray status` does.
#pragma once

#include <string>

#include "cluster.pb.h"
#include "common/proto_json.h"

namespace clusterd::cli {

// "Journal: ok, 1.2 MiB (compacted to 200 KiB at ...)" or "Journal: FAILING
// since <time>: <why> (...)".
std::string FormatJournalLine(const JournalStatus& journal);
// A state's nodes are listed one per line up to this many; past it, and
// unless all_nodes, `status` gives their count and where to see them, so a
// large cluster's summary stays a screenful (`ray status` prints counts).
inline constexpr int kNodesListed = 20;
// Nodes by state, resources used/total, pending demands.
std::string FormatClusterStatus(const ClusterStatus& status, int64_t now_unix_ms, bool all_nodes = false);
// The "Demands:" section: one line per shape of what waiting jobs ask,
// with how many jobs ask it, e.g. " 12,000 jobs of 1 x {1 CPU, 2 GiB}:
// queued (first: job-0001, train)"; as many lines as shapes (the head
// sends at most JobManager::kDemandShapes), however long the queue.
std::string FormatDemands(const google::protobuf::RepeatedPtrField<PendingDemand>& pending);
// One row per node: name, id, state, address, resources, last heartbeat.
std::string FormatNodeTable(const google::protobuf::RepeatedPtrField<NodeInfo>& nodes, int64_t now_unix_ms);
using clusterd::ToJson;

}  // namespace clusterd::cli
