// What this node's agent does for a job whose rank 0 runs here: it stores
// each checkpoint rank 0 reports (if the head asked for that) and, when rank
// 0 exits 0, the job's outputs before the exit is reported. Only folders
// inside the job's own checkpoint folder and working folder are ever read,
// whatever a rank reports. Thread-safe.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "agent.pb.h"
#include "cluster.pb.h"
#include "daemon/agent/results_uploader.h"

namespace clusterd {

class RankZeroResults {
 public:
  // REQUIRES: uploader outlives this object.
  explicit RankZeroResults(ResultsUploader* uploader) : uploader_(uploader) {}

  // A launch about to start here, working_dir resolved; kept when it holds rank 0.
  void Remember(const LaunchRanks& launch);
  // A rank's report: its checkpoint is stored when it is rank 0's, of a
  // launch that asked for it, and lies inside the job's checkpoint folder;
  // one outside it is refused, and the head told why.
  void OnReport(const MetricsReport& report);
  // Rank 0's clean exit is taken (true) in a job with outputs, or while a
  // checkpoint of its attempt is still being stored: the uploader reports
  // it once they are stored (or the wait for the checkpoint is over).
  // Anything else is left to the caller. Any exit of rank 0 lets its
  // checkpoints still to be sent go unpaced.
  bool TakeExit(const AgentMessage& message);

 private:
  struct RankZero {
    std::string work_dir;
    std::string checkpoint_dir;
    bool store_checkpoints = false;
    std::vector<std::string> outputs;
    std::string checkpoint_storage;  // the job's own S3 locations, or ""
    int64_t checkpoint_bytes_per_s = 0;  // checkpoint.upload_rate; 0: no limit
    std::string outputs_storage;
  };

  ResultsUploader* uploader_;
  std::mutex mutex_;
  std::map<std::pair<std::string, int>, RankZero> launches_;  // (job, attempt)
};

// Whether `path` names something strictly inside folder `dir` (both
// absolute; ".." and symlinks are judged by the real paths).
bool IsInside(const std::string& path, const std::string& dir);

}  // namespace clusterd
