// What a user sees of another user's job: the record, with the ids of its
// data in the store hidden (its package, checkpoints and outputs), and
// each attempt's hang diagnosis (its ranks' last lines: their logs); of
// another user's sweep, its trials without the values they reported. A blob's
// id is the SHA-256 of its bytes and the store serves any id it is asked
// for, so an id a user never learns is one they cannot fetch: the outputs
// and checkpoints stay the owner's and the admins' to read.
#pragma once

#include "cluster.pb.h"
#include "daemon/head/identity/principal.h"

namespace clusterd {

// What a hidden id reads as (shown_records.h's word for hidden values).
inline constexpr char kHiddenId[] = "(hidden)";
// What another user's hang diagnosis reads as.
inline constexpr char kHiddenDiagnosis[] = "(hidden: it holds what the job's ranks printed, the owner's to read)";

// Hides the store ids and hang diagnoses of each record `caller` neither
// owns nor is an admin for.
void HideOthersData(const Principal& caller, JobInfo* job);
void HideOthersData(const Principal& caller, ListJobsReply* jobs);
// The job as above, and its newest metric record left out: what a job
// reports is the owner's, as its logs are (OwnedAction::kReadMetrics).
void HideOthersData(const Principal& caller, RunningJobRecord* running);
void HideOthersData(const Principal& caller, SweepInfo* sweep);
void HideOthersData(const Principal& caller, ListSweepsReply* sweeps);

}  // namespace clusterd
