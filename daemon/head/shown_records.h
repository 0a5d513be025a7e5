// What the head shows of its records to whoever asks (clusterctl, the
// dashboard's JSON): everything but the values of the submitter's
// passthrough variables. env_passthrough is how credentials reach ranks
// (WANDB_API_KEY, AWS_SECRET_ACCESS_KEY), so a reader with the cluster's
// token sees their names only. The head keeps the values, in memory and
// in its private journal, for every attempt it launches.
#pragma once

#include "cluster.pb.h"

namespace clusterd {

// What a hidden value reads as.
inline constexpr char kHiddenValue[] = "(hidden)";

void HidePassthroughValues(JobInfo* job);
void HidePassthroughValues(ListJobsReply* jobs);
void HidePassthroughValues(SweepInfo* sweep);
void HidePassthroughValues(ListSweepsReply* sweeps);

}  // namespace clusterd
