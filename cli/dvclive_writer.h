// Writes a job's metrics in DVCLive's layout, so DVC can plot them:
//   <dir>/metrics.json             the latest value of every metric (and "step")
//   <dir>/plots/metrics/NAME.tsv   "step\tNAME" then one row per report
#pragma once

#include <string>

#include "cluster.pb.h"
#include "common/status.h"

namespace clusterd {

// Appends one report (step = its index) to the layout under dir.
Status WriteDvcLive(const std::string& dir, const MetricRecord& record);

}  // namespace clusterd
