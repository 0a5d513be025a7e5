#include "daemon/head/identity/ownership_check.h"
#include "daemon/http/job_api.h"

#include <google/protobuf/util/json_util.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/job_state.h"
#include "common/logging.h"
#include "common/proto_json.h"
#include "common/text.h"
#include "daemon/head/shown_records.h"
#include "daemon/http/http_query.h"
#include "daemon/http/json_reply.h"
#include "daemon/http/package_upload.h"

namespace clusterd {

namespace {

constexpr char kJobs[] = "/api/jobs";
constexpr char kJob[] = "/api/job";
constexpr char kStop[] = "/api/job/stop";

// A job's record as clients may see it (passthrough values hidden), in
// protobuf's JSON form, as a member of a reply. Protobuf writes valid JSON;
// should it not, the member is null rather than an exception on the loop.
nlohmann::ordered_json ShownJson(JobInfo job) {
  HidePassthroughValues(&job);
  auto json = nlohmann::ordered_json::parse(ToJson(job), nullptr, /*allow_exceptions=*/false);
  return json.is_discarded() ? nlohmann::ordered_json() : json;
}

// What the job-submission API submits is one job; the rest of JobSpec's
// kinds have their own front ends, which check what this one does not.
Status OneJob(const JobSpec& spec) {
  if (spec.has_tune()) {
    return Status::InvalidArgument("key 'tune': this endpoint submits one job; submit a sweep with clusterctl submit");
  }
  if (spec.has_array()) {
    return Status::InvalidArgument("key 'array': this endpoint submits one job; submit an array with clusterctl submit");
  }
  if (!spec.sweep_id().empty()) {
    return Status::InvalidArgument("key 'sweep_id': set by the head for a sweep's trials, not by a submitter");
  }
  return Status::Ok();
}

}  // namespace

Result<JobInfo> FindJob(const JobManager& jobs, const std::string& id) {
  auto job = jobs.Get(id);
  if (job.ok() || job.status().code() != Status::Code::kNotFound) return job;
  if (auto submitted = jobs.JobOfSubmission(id)) return jobs.Get(*submitted);
  return job.status();
}

std::string JobApi::AllowedMethods(const std::string& path) {
  if (path == kJobs) return "GET, HEAD, POST";
  if (path == kJob) return "GET, HEAD, DELETE";
  if (path == kStop) return "POST";
  if (PackageUploads::IsPath(path)) return "GET, HEAD, PUT";
  return "GET, HEAD";
}

bool JobApi::IsWrite(const std::string& method, const std::string& path) {
  return (method == "POST" && (path == kJobs || path == kStop)) || (method == "DELETE" && path == kJob);
}

HttpReply JobApi::Answer(const HttpRequest& request, const Principal& caller) {
  const std::string path = TargetPath(request.target);
  if (path == kJobs) return Submit(request.body, caller);
  auto id = QueryParam(request.target, "id");
  if (!id || id->empty()) return JsonError(400, "which job? (?id=JOB or a submission_id)");
  return path == kStop ? Stop(*id, caller) : Delete(*id, caller);
}

HttpReply JobApi::Submit(const std::string& body, const Principal& caller) {
  SubmitJobRequest request;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;  // a misspelt key is an error, not a default
  auto parsed = google::protobuf::util::JsonStringToMessage(body, request.mutable_spec(), options);
  if (!parsed.ok()) {
    // The parser quotes what it could not take: shown, never obeyed.
    return JsonError(400, fmt::format("the body is not a job spec (JobSpec as JSON, proto/cluster.proto): {}",
                                      JsonQuote(parsed.message().as_string())));
  }
  const JobSpec& spec = request.spec();
  Status one = OneJob(spec);
  if (!one.ok()) return JsonErrorOf(one);
  // Checked as gRPC's SubmitJob is: the same call.
  auto id = core_->jobs().Submit(request, caller.user);
  if (!id.ok()) return JsonErrorOf(id.status());
  LOG_INFO("job {} ({}) submitted over HTTP{}", *id, spec.name(),
           spec.submission_id().empty() ? "" : " as submission " + spec.submission_id());
  const std::string& submission = spec.submission_id().empty() ? *id : spec.submission_id();
  return JsonReply(200, {{"job_id", *id}, {"submission_id", submission}});
}

HttpReply JobApi::Stop(const std::string& id, const Principal& caller) {
  auto job = FindJob(core_->jobs(), id);
  if (!job.ok()) return JsonErrorOf(job.status());
  Status allowed = CheckOwnership(*core_, caller, job->job_id(), false, OwnedAction::kStop);
  if (!allowed.ok()) return JsonErrorOf(allowed);
  const bool ended = IsTerminal(job->state());
  auto stopped = core_->jobs().Stop(job->job_id(), "stopped through the job-submission API");
  if (!stopped.ok()) return JsonErrorOf(stopped.status());
  return JsonReply(200, {{"stopped", !ended}, {"job", ShownJson(std::move(*stopped))}});
}

HttpReply JobApi::Delete(const std::string& id, const Principal& caller) {
  auto job = FindJob(core_->jobs(), id);
  if (!job.ok()) return JsonErrorOf(job.status());
  Status allowed = CheckOwnership(*core_, caller, job->job_id(), false, OwnedAction::kDelete);
  if (!allowed.ok()) return JsonErrorOf(allowed);
  auto deleted = core_->jobs().Delete(job->job_id());
  if (!deleted.ok()) return JsonErrorOf(deleted.status());
  return JsonReply(200, {{"deleted", true}, {"job", ShownJson(std::move(*deleted))}});
}

}  // namespace clusterd
