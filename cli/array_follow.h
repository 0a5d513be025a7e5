// An array's jobs from the client's side: listing them all, and following
// them until every one has ended (`clusterctl submit --follow` of an
// array file).
#pragma once

#include <string>
#include <vector>

#include "cli/client.h"
#include "cluster.pb.h"
#include "common/status.h"

namespace clusterd::cli {

// Every job of array `array_id`, in index order, page by page; with
// `states_only`, each with its job_id and state only.
Result<std::vector<JobInfo>> ListArray(HeadClient& client, const std::string& array_id, bool states_only = false);

// Prints the array's jobs by state each time that changes, until all have
// ended: 0 if every one of `count` SUCCEEDED (what a DVC stage needs), else 1.
int FollowArray(HeadClient& client, const std::string& array_id, int count);

}  // namespace clusterd::cli
