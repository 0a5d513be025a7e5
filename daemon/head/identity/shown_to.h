// What a user sees of another user's job: the record, with the ids of its
// data in the store hidden (its package, checkpoints and outputs). A blob's
// id is the SHA-256 of its bytes and the store serves any id it is asked
// for, so an id a user never learns is one they cannot fetch: the outputs
// and checkpoints stay the owner's and the admins' to read.
#pragma once

#include "cluster.pb.h"
#include "daemon/head/identity/principal.h"

namespace clusterd {

// What a hidden id reads as (shown_records.h's word for hidden values).
inline constexpr char kHiddenId[] = "(hidden)";

// Hides the store ids of each record `caller` neither owns nor is an admin for.
void HideOthersData(const Principal& caller, JobInfo* job);
void HideOthersData(const Principal& caller, ListJobsReply* jobs);
void HideOthersData(const Principal& caller, SweepInfo* sweep);
void HideOthersData(const Principal& caller, ListSweepsReply* sweeps);

}  // namespace clusterd
