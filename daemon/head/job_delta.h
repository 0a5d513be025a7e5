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

// Takes a record's spec and passthrough_env out while it lives and puts
// them back after, in O(1) (the submessage's pointer and the map's storage
// move): a delta and its base are made from the rest without copying the
// spec, most of a record, only to throw the copy away.
class SpecAside {
 public:
  explicit SpecAside(JobInfo* info);
  ~SpecAside();
  SpecAside(const SpecAside&) = delete;
  SpecAside& operator=(const SpecAside&) = delete;

 private:
  JobInfo* info_;
  JobSpec* spec_;
  google::protobuf::Map<std::string, std::string> env_;
};

// The delta that turns `before` (as last journaled; spec and env are not
// looked at) into `after`. False, leaving *delta unspecified, when they are
// the same.
bool MakeDelta(const JobInfo& before, const JobInfo& after, JobDelta* delta);

// Applies a delta to a job's record as replayed so far.
void ApplyDelta(const JobDelta& delta, JobInfo* record);

}  // namespace clusterd
