// clusterctl sweep SWEEP [--json], and what `submit --follow` does for a
// job file with a tune section: a live trials table until the sweep ends,
// then best_params and trials.csv written in the submitter's working_dir.
#pragma once

#include <string>
#include <vector>

#include "cli/client.h"
#include "cluster.pb.h"

namespace clusterd::cli {

int SweepCommand(const std::vector<std::string>& args);

// Prints the table whenever it changes until the sweep is over; writes
// tune.best_params and trials.csv beside it, under `working_dir` (the
// spec's; the current folder when empty). Exit 0 when a trial ran to its end.
int FollowSweep(HeadClient& client, const std::string& sweep_id, const std::string& working_dir);

}  // namespace clusterd::cli
