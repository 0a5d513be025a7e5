// clusterctl top: a live view of the cluster, redrawn in place on a
// terminal; plain text blocks when stdout is not one (docs/CLI.md).
#pragma once

#include <string>
#include <vector>

#include "cli/client.h"
#include "cli/top_frame.h"

namespace clusterd::cli {

int TopCommand(const std::vector<std::string>& args);

// One refresh's calls, two whatever the cluster's size: GetStatus (at most
// `nodes_per_state` nodes of each state; 0: all) and ListRunningJobs (the
// running jobs counted, the oldest `max_jobs` of them, at most 1000, each
// with its newest metric record, not its history).
Result<TopSnapshot> FetchTopSnapshot(HeadClient& client, int nodes_per_state, int max_jobs);

}  // namespace clusterd::cli
