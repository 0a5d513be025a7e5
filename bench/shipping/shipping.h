// The shipping benchmark (docs/BENCHMARKS.md, "shipping"): a ~100 MiB
// working_dir from a client machine to a rank running on w1, first time and
// unchanged, against `working_dir_mode: shared` and against tar | nc, all in
// one run on three simulated machines (ship_cluster.h).
#pragma once

#include "report.h"
#include "work_folder.h"

namespace clusterd::bench {

struct ShippingOptions {
  int trials = 10;  // rounds of the four kinds, after one warm-up round (p90 needs 10)
  FolderSpec folder;
};

// Adds the rows to `report`; false (noted in the report) when some part
// could not measure.
bool RunShipping(const ShippingOptions& options, Report* report);

}  // namespace clusterd::bench
