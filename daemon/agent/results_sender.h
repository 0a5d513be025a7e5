// Sends one of the results uploader's tasks (results_uploader.h) to the
// store, in the calling thread: a checkpoint folder from its snapshot, with
// the folder's hash cache (so that a file unchanged since the last report
// is not read again) and each chunk counted on the upload's pacer; or a
// rank's outputs from its working folder, unpaced. Each returns what the
// head is to be told, or why nothing was stored, for the uploader to try
// again or give up on. Kept apart from the queueing, retrying and threads
// so that what goes to the store, and what the head hears of it, is tested
// on its own. Thread-safe as its store is.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "agent.pb.h"
#include "common/rate_pacer.h"
#include "common/status.h"
#include "common/storage/cluster_storage.h"
#include "daemon/agent/upload_queue.h"

namespace clusterd {

class ResultsSender {
 public:
  // Told after each chunk sent, once the pacer let it go.
  using ProgressFn = std::function<void(int64_t done, int64_t total)>;

  // `hash_dir`: where per-folder hash caches live. REQUIRES: `store` outlives it.
  ResultsSender(ClusterStorage* store, std::string hash_dir) : store_(store), hash_dir_(std::move(hash_dir)) {}

  // Sends checkpoint task.paths.front() from task.root to task.location,
  // waiting on `pacer` as it goes; returns the CheckpointStored to send.
  // A checkpoint gone from its folder is NotFound.
  Result<AgentMessage> SendCheckpoint(const UploadTask& task, RatePacer& pacer, const ProgressFn& progress) const;
  // Sends task.paths under task.root to task.location; returns task.exit
  // with the outputs' manifest, bytes and the paths that were missing.
  Result<AgentMessage> SendOutputs(const UploadTask& task) const;

 private:
  ClusterStorage* store_;
  std::string hash_dir_;
};

}  // namespace clusterd
