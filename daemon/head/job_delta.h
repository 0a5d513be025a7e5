// Journal deltas (JournalEntry.delta): a transition journals what changed in
// a job's record since its previous entry, not the whole record, so that a
// job with many attempts does not write its whole history at every step.
// Pure functions: ApplyDelta(MakeDelta(a, b)) on a gives b, exactly.
#pragma once

#include "cluster.pb.h"
#include "journal.pb.h"

namespace clusterd {

// Sums up `oldest`, the oldest attempt kept in full, into `older`, before it
// is dropped from the record (the head's attempt cap; replay does the same).
void FoldAttempt(const AttemptInfo& oldest, AttemptsSummary* older);

// What a delta is computed against: the record without spec and
// passthrough_env, which never change after submit.
JobInfo WithoutSpec(const JobInfo& info);

// The delta that turns `before` (as last journaled; spec and env are not
// looked at) into `after`. False, leaving *delta unspecified, when they are
// the same.
bool MakeDelta(const JobInfo& before, const JobInfo& after, JobDelta* delta);

// Applies a delta to a job's record as replayed so far.
void ApplyDelta(const JobDelta& delta, JobInfo* record);

}  // namespace clusterd
