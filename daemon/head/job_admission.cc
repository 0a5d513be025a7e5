#include "daemon/head/job_admission.h"

#include <vector>

#include <fmt/format.h>

#include "common/jobspec/env_match.h"
#include "common/jobspec/job_spec.h"
#include "common/logging.h"

namespace clusterd {

Status JobAdmission::AdmitJobs(int64_t adding, const std::string& owner) const {
  const int64_t unfinished = static_cast<int64_t>(table_->unfinished().size());
  return limits_.Admit("user " + owner, owner_counts_.Unfinished(owner), unfinished, adding);
}

Status JobAdmission::CheckSpec(const JobSpec& spec) const {
  RETURN_IF_ERROR(ValidateJobSpec(spec, config_.max_num_workers));
  return logs_->CheckSpec(spec);
}

Result<std::string> JobAdmission::Submit(const SubmitJobRequest& request, const std::string& owner) {
  // The CLI validated the file, but the wire is open to any client.
  RETURN_IF_ERROR(CheckSpec(request.spec()));
  // The queue policy resolves a priority class to its number and holds the
  // owner to their maximum priority, before anything is made.
  SubmitJobRequest admitted;
  const bool prioritised = request.spec().priority() != 0 || !request.spec().priority_class().empty();
  if (prioritised) {
    admitted = request;
    RETURN_IF_ERROR(placement_->policy().AdmitPriority(owner, admitted.mutable_spec()));
  }
  const SubmitJobRequest& request_in = prioritised ? admitted : request;
  const JobSpec& spec = request_in.spec();
  if (spec.working_dir_mode() == SHIP && !spec.working_dir().empty() && spec.package_id().empty()) {
    return Status::InvalidArgument(fmt::format(
        "job '{}' ships working_dir {} but names no package: submit it with clusterctl, which packs and uploads "
        "the folder (or set working_dir_mode: shared for a path every machine has)", spec.name(), spec.working_dir()));
  }
  // clusterctl sends only what env_passthrough matched, minus clusterd's
  // own names; any other client is held to the same rule.
  std::vector<std::string> patterns(spec.env_passthrough().begin(), spec.env_passthrough().end());
  for (const auto& [name, value] : request_in.passthrough_env()) {
    if (IsReservedWorkerVariable(name)) {
      return Status::InvalidArgument(fmt::format("passthrough variable {} is set by clusterd and cannot be passed", name));
    }
    if (!MatchesAnyPattern(patterns, name)) {
      return Status::InvalidArgument(fmt::format("passthrough variable {} matches no env_passthrough pattern", name));
    }
  }
  if (!spec.submission_id().empty()) {
    if (auto taken = table_->JobOfSubmission(spec.submission_id())) {
      return Status::AlreadyExists(fmt::format("key 'submission_id': '{}' is job {}'s already; choose another",
                                               spec.submission_id(), *taken));
    }
  }
  RETURN_IF_ERROR(AdmitJobs(spec.has_array() ? spec.array().count() : 1, owner));
  Status writable = table_->journal().Writable();
  if (!writable.ok()) return NotDurable(writable, "the job was not submitted");
  if (spec.has_array()) return SubmitArray(request_in, owner);
  ASSIGN_OR_RETURN(std::string id, Create(request_in, spec, owner));
  placement_->Schedule();
  TrackedJob* job = table_->Find(id);
  if (job && job->info.state() == PENDING && job->info.reason() == JobQueue::kReason) {
    placement_->MarkIfInfeasible(*job);  // behind a waiting job: untried
  }
  return id;
}

Result<std::string> JobAdmission::SubmitArray(const SubmitJobRequest& request, const std::string& owner) {
  JobSpec spec = request.spec();
  std::string array_id;
  const int count = spec.array().count();
  for (int i = 0; i < count; ++i) {
    spec.set_array_index(i);
    auto made = Create(request, spec, owner);
    if (!made.ok()) {
      placement_->Schedule();  // those made before this still run
      if (i == 0) return made.status();
      // Those made are journalled and stay; say so rather than hide them.
      return made.status().WithContext(fmt::format(
          "array {}: {} of its {} jobs were made before this (stop them with clusterctl stop {})", array_id, i,
          count, array_id));
    }
    if (i == 0) {
      array_id = *made;  // Create named the array after its first job
      spec.set_array_id(array_id);
    }
  }
  LOG_INFO("array {} ({}): {} jobs, at most {} at once", array_id, spec.name(), count,
           spec.array().max_concurrent() > 0 ? std::to_string(spec.array().max_concurrent()) : "all");
  placement_->Schedule();
  return array_id;
}

Result<std::string> JobAdmission::Create(const SubmitJobRequest& request, const JobSpec& spec,
                                         const std::string& owner) {
  TrackedJob job;
  *job.info.mutable_spec() = spec;
  job.info.set_job_id(table_->NewJobId());
  job.info.set_owner(owner);
  // An array's first job names the array (Slurm's SLURM_ARRAY_JOB_ID).
  if (spec.has_array() && spec.array_id().empty()) job.info.mutable_spec()->set_array_id(job.info.job_id());
  Status held = data_->HoldPackage(job.info);
  if (!held.ok()) {
    table_->ReturnJobId();  // the id was never handed out
    return held;
  }
  *job.info.mutable_passthrough_env() = request.passthrough_env();
  job.info.set_submit_unix_ms(clock_->UnixMillis());
  job.info.set_state(PENDING);
  job.info.set_reason(JobQueue::kReason);
  // Only a job the journal holds is acknowledged: a head restarted after a
  // failed write must not forget an id it handed out.
  Status recorded = table_->journal().AddJob(job.info);
  if (!recorded.ok()) {
    data_->Delete(job.info);  // lets the package go again
    table_->ReturnJobId();
    return NotDurable(recorded, "the job was not submitted");
  }
  std::string id = job.info.job_id();
  LOG_INFO("job {} ({}): submitted, PENDING: queued", id, spec.name());
  if (!spec.submission_id().empty()) table_->IndexSubmission(spec.submission_id(), id);
  table_->Add(std::move(job));
  table_->queue().push_back(id);
  return id;
}

}  // namespace clusterd
