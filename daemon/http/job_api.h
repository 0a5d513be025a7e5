// The job-submission API on the dashboard port, what clusterd.job_submission
// (Ray's JobSubmissionClient) speaks; reads are the dashboard's own
// (/api/job, /api/jobs, /api/logs), which take a submission_id wherever
// they take a job id.
//   POST   /api/jobs           body: a JobSpec as protobuf JSON (proto/
//                              cluster.proto; snake_case or lowerCamel
//                              names), one job: 200 {"job_id","submission_id"}
//   POST   /api/job/stop?id=J  200 {"stopped": false when it had ended, "job": JobInfo}
//   DELETE /api/job?id=J       200 {"deleted": true, "job": JobInfo}; 409 while it runs
// The spec is checked as gRPC's SubmitJob checks it (JobManager::Submit
// runs ValidateJobSpec): 400 names the bad key; 409 for a submission_id
// taken or a package the store lacks. Sweeps and arrays are clusterctl's.
// Package uploads: package_upload.h.
#pragma once

#include <string>

#include "common/status.h"
#include "daemon/head/head_core.h"
#include "daemon/head/identity/principal.h"
#include "daemon/http/http_server.h"

namespace clusterd {

// The job `id` names: one of the head's job ids, else a submission_id.
Result<JobInfo> FindJob(const JobManager& jobs, const std::string& id);

class JobApi {
 public:
  // REQUIRES: core outlives this.
  explicit JobApi(HeadCore* core) : core_(core) {}

  // The methods `path` takes, for a 405's Allow header ("GET, HEAD" for
  // the dashboard's read-only paths).
  static std::string AllowedMethods(const std::string& path);
  // Whether `method` on `path` is one of this API's writes (POST, DELETE;
  // the PUT of a package is PackageUploads').
  static bool IsWrite(const std::string& method, const std::string& path);

  // REQUIRES: on the head's loop; IsWrite(request.method, its path); the
  // token was resolved to `caller`, a user (the owner rule applies here:
  // 403 naming it).
  HttpReply Answer(const HttpRequest& request, const Principal& caller);

 private:
  HttpReply Submit(const std::string& body, const Principal& caller);
  HttpReply Stop(const std::string& id, const Principal& caller);
  HttpReply Delete(const std::string& id, const Principal& caller);

  HeadCore* core_;
};

}  // namespace clusterd
