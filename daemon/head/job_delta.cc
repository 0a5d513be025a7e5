#include "daemon/head/job_delta.h"

#include <algorithm>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

namespace clusterd {

namespace {

// The message's bytes, map entries in key order.
std::string Bytes(const google::protobuf::MessageLite& message) {
  std::string out;
  google::protobuf::io::StringOutputStream stream(&out);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.SetSerializationDeterministic(true);
  message.ByteSizeLong();  // caches the sizes the next call writes
  message.SerializeWithCachedSizes(&coded);
  return out;
}

// Whether two messages hold the same fields and values. Their bytes, not
// MessageDifferencer: its walk by reflection is a tenth of the head's loop
// in a burst of short jobs, for each job's every change.
bool Same(const google::protobuf::MessageLite& a, const google::protobuf::MessageLite& b) {
  return Bytes(a) == Bytes(b);
}

// The scalar part of a record: all but spec, env, attempts, checkpoints and
// the summary of older attempts.
JobInfo Head(const JobInfo& info) {
  JobInfo head = info;
  head.clear_spec();
  head.clear_passthrough_env();
  head.clear_attempts();
  head.clear_stored_checkpoints();
  head.clear_older_attempts();
  return head;
}

// `older` with the attempts of `attempts` numbered below `first` folded in.
AttemptsSummary FoldBelow(AttemptsSummary older, const google::protobuf::RepeatedPtrField<AttemptInfo>& attempts,
                          int first) {
  for (const AttemptInfo& attempt : attempts) {
    if (attempt.attempt() < first) FoldAttempt(attempt, &older);
  }
  return older;
}

bool SameCheckpoints(const JobInfo& a, const JobInfo& b) {
  if (a.stored_checkpoints_size() != b.stored_checkpoints_size()) return false;
  for (int i = 0; i < a.stored_checkpoints_size(); ++i) {
    if (!Same(a.stored_checkpoints(i), b.stored_checkpoints(i))) return false;
  }
  return true;
}

int FirstAttempt(const JobInfo& info) { return info.attempts_size() > 0 ? info.attempts(0).attempt() : 0; }

const AttemptInfo* FindAttempt(const JobInfo& info, int number) {
  for (const AttemptInfo& attempt : info.attempts()) {
    if (attempt.attempt() == number) return &attempt;
  }
  return nullptr;
}

}  // namespace

void FoldAttempt(const AttemptInfo& oldest, AttemptsSummary* older) {
  if (older->count() == 0) older->set_first_start_unix_ms(oldest.start_unix_ms());
  older->set_count(oldest.attempt() + 1);
  if (oldest.failure_reason().empty()) return;
  if (older->failed() == 0) {
    older->set_first_failed_attempt(oldest.attempt());
    older->set_first_failure_reason(oldest.failure_reason());
  }
  older->set_failed(older->failed() + 1);
  older->set_last_failed_attempt(oldest.attempt());
  older->set_last_failure_reason(oldest.failure_reason());
}

JobInfo WithoutSpec(const JobInfo& info) {
  JobInfo out = info;
  out.clear_spec();
  out.clear_passthrough_env();
  return out;
}

SpecAside::SpecAside(JobInfo* info) : info_(info), spec_(info->release_spec()) {
  env_.swap(*info->mutable_passthrough_env());
}

SpecAside::~SpecAside() {
  info_->set_allocated_spec(spec_);
  info_->mutable_passthrough_env()->swap(env_);
}

bool MakeDelta(const JobInfo& before, const JobInfo& after, JobDelta* delta) {
  delta->Clear();
  *delta->mutable_info() = Head(after);
  bool changed = !Same(delta->info(), Head(before));
  if (!SameCheckpoints(before, after)) {
    delta->set_checkpoints_changed(true);
    *delta->mutable_info()->mutable_stored_checkpoints() = after.stored_checkpoints();
    changed = true;
  }
  delta->set_first_attempt(FirstAttempt(after));
  // Folded attempts are summed up by replay itself; only a summary that is
  // not what that gives travels.
  if (!Same(FoldBelow(before.older_attempts(), before.attempts(), delta->first_attempt()),
            after.older_attempts())) {
    delta->set_older_changed(true);
    *delta->mutable_info()->mutable_older_attempts() = after.older_attempts();
    changed = true;
  }
  // An attempt that disappeared without a fold (never happens) is caught by
  // the count check, and journaled as a change of first_attempt at least.
  changed = changed || delta->first_attempt() != FirstAttempt(before) ||
            after.attempts_size() < before.attempts_size();
  for (const AttemptInfo& attempt : after.attempts()) {
    const AttemptInfo* old = FindAttempt(before, attempt.attempt());
    if (old == nullptr || !Same(*old, attempt)) {
      *delta->add_attempts() = attempt;
      changed = true;
    }
  }
  return changed;
}

void ApplyDelta(const JobDelta& delta, JobInfo* record) {
  JobInfo old = std::move(*record);
  *record = delta.info();
  record->mutable_spec()->Swap(old.mutable_spec());
  record->mutable_passthrough_env()->swap(*old.mutable_passthrough_env());
  if (!delta.checkpoints_changed()) record->mutable_stored_checkpoints()->Swap(old.mutable_stored_checkpoints());
  if (!delta.older_changed()) {
    AttemptsSummary folded = FoldBelow(old.older_attempts(), old.attempts(), delta.first_attempt());
    // Present only where the head's record has one: after a fold.
    if (old.has_older_attempts() || folded.count() > 0) *record->mutable_older_attempts() = std::move(folded);
  }
  auto* attempts = record->mutable_attempts();
  for (AttemptInfo& attempt : *old.mutable_attempts()) {
    if (attempt.attempt() >= delta.first_attempt()) attempts->Add(std::move(attempt));
  }
  for (const AttemptInfo& attempt : delta.attempts()) {
    auto same = std::find_if(attempts->begin(), attempts->end(),
                             [&](const AttemptInfo& a) { return a.attempt() == attempt.attempt(); });
    if (same != attempts->end()) {
      *same = attempt;
    } else {
      *attempts->Add() = attempt;
    }
  }
  std::stable_sort(attempts->begin(), attempts->end(),
                   [](const AttemptInfo& a, const AttemptInfo& b) { return a.attempt() < b.attempt(); });
}

}  // namespace clusterd
