// A job's results on the submitter's machine (DESIGN rule 11): its DVCLive
// files, written here from the head's reports (live while following), its
// outputs, downloaded into the working_dir when it succeeded, and its
// stored checkpoints. The head never writes into a user's folder.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "cli/client.h"
#include "cluster.pb.h"
#include "common/status.h"

namespace clusterd::cli {

// Keeps a job's DVCLive folder up to date while `clusterctl submit --follow`
// runs: Poll() rewrites it when new reports arrived (at most once a second).
class DvcLiveFollower {
 public:
  // Writes nothing for a job without `dvclive:` or a working_dir.
  DvcLiveFollower(HeadClient& client, const JobInfo& job);
  void Poll();
  // The final files; an error is one line (the job's state is unaffected).
  Status Finish();

 private:
  Status Write();

  HeadClient& client_;
  std::string job_id_;
  std::string dir_;
  int records_ = 0;
  int64_t last_ms_ = 0;
};

// Whether the job names anything to bring back: outputs or a dvclive folder.
bool HasResults(const JobInfo& job);
bool HasResults(const JobSpec& spec);

// Where a job's results go on this machine: `out` when given, else the
// job's working_dir when it exists here, else an error saying to pass --out.
Result<std::string> ResultsFolder(const JobInfo& job, const std::string& out);

// The job's outputs into `dir` (files replaced whole), and its DVCLive
// files under dir/<dvclive> when it had them. Says what it wrote on stderr.
Status FetchOutputs(HeadClient& client, const JobInfo& job, const std::string& dir);

// The newest stored checkpoint as the folder dir/<checkpoint name>.
Status FetchCheckpoint(HeadClient& client, const JobInfo& job, const std::string& dir);
// The job once the checkpoint rank 0 had reported last when it was asked
// is stored (or a newer one), or its node gave it up (checkpoint_refused),
// or `limit` has passed; at once when there is none to wait for (nothing
// reported, shared storage). Says on stderr what it waits for.
Result<JobInfo> WaitForReportedCheckpoint(HeadClient& client, JobInfo job, std::chrono::milliseconds limit);

// Before a submit: the S3 locations the job names for itself
// (checkpoint.storage, outputs_storage) exist and take this machine's
// credentials; else one line naming the key, the bucket and the endpoint.
Status CheckJobStorage(HeadClient& client, const JobSpec& spec);

}  // namespace clusterd::cli
