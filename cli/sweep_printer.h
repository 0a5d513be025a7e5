// How clusterctl shows a sweep: the trials table (params, state, last
// metric, best so far), best_params as YAML (the best trial's parameters,
// as Ray Tune's stage writes them) and trials.csv. Pure functions.
#pragma once

#include <string>

#include "cluster.pb.h"

namespace clusterd::cli {

const char* TrialStateText(TrialState state);
const char* SweepStateText(SweepState state);
std::string FormatSweepTable(const SweepInfo& sweep);
// "lr: 0.0031\nhidden: 128\n"; "" when no trial reported the metric.
std::string BestParamsYaml(const SweepInfo& sweep);
// A header, then a row per trial: trial, job_id, state, each parameter,
// iterations, the metric, reason.
std::string TrialsCsv(const SweepInfo& sweep);

}  // namespace clusterd::cli
