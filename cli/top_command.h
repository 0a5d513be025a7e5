// clusterctl top: a live view of the cluster, redrawn in place on a
// terminal; plain text blocks when stdout is not one (docs/CLI.md).
#pragma once

#include <string>
#include <vector>

#include "cli/client.h"
#include "cli/top_frame.h"

namespace clusterd::cli {

int TopCommand(const std::vector<std::string>& args);

// One refresh's calls: the status (at most `nodes_per_state` nodes of each
// state; 0: all), the running jobs' ids and states, and for at most
// `max_jobs` of them the job and its newest metric record
// (JobRequest.latest_only: one record, not the job's history).
Result<TopSnapshot> FetchTopSnapshot(HeadClient& client, int nodes_per_state, int max_jobs);

}  // namespace clusterd::cli
