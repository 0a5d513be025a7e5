// A job's metrics in DVCLive's layout, written on the submitter's machine
// (under the job file's `dvclive:` folder in its working_dir), so that a DVC
// stage finds them where DVC expects:
//   <dir>/metrics.json                  each metric's latest value, and "step"
//   <dir>/plots/metrics/NAME.tsv        "timestamp\tstep\tNAME", a row per step
//                                       that logged NAME
// A metric named "train/loss" nests as DVCLive nests it: plots/metrics/train/
// loss.tsv and {"train": {"loss": ...}}.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "cluster.pb.h"
#include "common/status.h"

namespace clusterd {

// One step of the job's history as DVCLive shows it.
struct DvcLiveStep {
  int64_t step = 0;
  int64_t unix_ms = 0;
  std::map<std::string, double> values;
};

// The job's history as one run: a record's step is its "step" value, else
// its "epoch", else its place among its attempt's reports; records of one
// step add up (a later value of a metric replaces an earlier). An attempt that
// resumed from a checkpoint redoes the steps its predecessor lost: its
// records replace the earlier attempts' from its first step on.
std::vector<DvcLiveStep> DvcLiveHistory(const MetricsReply& metrics);

// Rewrites the layout under `dir` (made if missing) from the whole history;
// each file is replaced atomically, so a reader never sees half of one.
Status WriteDvcLive(const std::string& dir, const MetricsReply& metrics);

}  // namespace clusterd
