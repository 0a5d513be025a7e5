#include "daemon/head/identity/shown_to.h"

#include "daemon/head/identity/access_rules.h"

namespace clusterd {

namespace {

bool Sees(const Principal& caller, const std::string& owner) { return caller.IsAdmin() || caller.user == owner; }

void HideId(std::string* id) {
  if (!id->empty()) *id = kHiddenId;
}

}  // namespace

void HideOthersData(const Principal& caller, JobInfo* job) {
  if (Sees(caller, OwnerOf(*job))) return;
  HideId(job->mutable_spec()->mutable_package_id());
  HideId(job->mutable_outputs_manifest());
  for (CheckpointRef& checkpoint : *job->mutable_stored_checkpoints()) HideId(checkpoint.mutable_manifest_id());
  // A hang diagnosis holds the ranks' last lines and stacks: their logs,
  // which only the owner may read (OwnedAction::kReadLogs).
  for (AttemptInfo& attempt : *job->mutable_attempts()) {
    if (!attempt.hang_diagnosis().empty()) attempt.set_hang_diagnosis(kHiddenDiagnosis);
  }
}

void HideOthersData(const Principal& caller, ListJobsReply* jobs) {
  for (JobInfo& job : *jobs->mutable_jobs()) HideOthersData(caller, &job);
}

void HideOthersData(const Principal& caller, RunningJobRecord* running) {
  HideOthersData(caller, running->mutable_job());
  if (!Sees(caller, OwnerOf(running->job()))) running->clear_latest();
}

void HideOthersData(const Principal& caller, SweepInfo* sweep) {
  if (Sees(caller, OwnerOf(*sweep))) return;
  HideId(sweep->mutable_spec()->mutable_package_id());
  // Each trial's reported values are its job's metrics: the owner's.
  for (TrialInfo& trial : *sweep->mutable_trials()) {
    trial.clear_last_metrics();
    trial.clear_has_metric();
    trial.clear_metric();
  }
}

void HideOthersData(const Principal& caller, ListSweepsReply* sweeps) {
  for (SweepInfo& sweep : *sweeps->mutable_sweeps()) HideOthersData(caller, &sweep);
}

}  // namespace clusterd
