// Following a job from clusterctl: its logs, page by page from the head,
// until it ends (`submit --follow`, `logs -f`), riding out a head restart,
// with Ctrl-C stopping the following, not the job.
#pragma once

#include <cstdint>
#include <string>

#include "cli/client.h"
#include "cluster.pb.h"
#include "common/status.h"

namespace clusterd::cli {

struct FollowOptions {
  std::string job_id;
  bool prefix_ranks = false;
  int rank = -1;
  int attempt = -1;
  bool follow = false;
  // submit --follow: DVCLive files written as reports arrive, outputs
  // downloaded into the working_dir when the job succeeded.
  bool results = false;
  // logs --json: each chunk the head sends as one JSON line
  // ({"rank":0,"end_offset":123,"text":"..."}) instead of the text.
  bool json = false;
};

// Prints a job's logs from the start. Without `follow` it stops when the
// head has nothing more and returns 0. With it, it polls every 200 ms until
// the job has ended (SUCCEEDED, FAILED, STOPPED) and its logs are drained,
// tells on stderr how the state changes, and returns 0 only for SUCCEEDED;
// Ctrl-C stops following (not the job) with 130.
int StreamLogs(HeadClient& client, const FollowOptions& options);

// The job's record from the head.
Result<JobInfo> GetJob(HeadClient& client, const std::string& job_id);

}  // namespace clusterd::cli
