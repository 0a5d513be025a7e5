#include "daemon/agent/results_sender.h"

#include "common/logging.h"
#include "common/storage/hash_cache.h"
#include "common/storage/tree_transfer.h"
#include "daemon/agent/results_messages.h"

namespace clusterd {

Result<AgentMessage> ResultsSender::SendCheckpoint(const UploadTask& task, RatePacer& pacer,
                                                   const ProgressFn& progress) const {
  HashCache cache = HashCache::Load(hash_dir_, task.root);
  TreeUploadOptions options;
  options.cache = &cache;
  // Called after each chunk of a piece, one call at a time: waiting here
  // holds back every stream of the upload.
  int64_t paced = 0;
  options.progress = [&](int64_t done, int64_t total) {
    pacer.TakeAndWait(done - paced);
    paced = done;
    if (progress) progress(done, total);
  };
  auto store = store_->At(task.location);
  auto uploaded = store.ok() ? UploadTree(**store, task.root, task.paths, options)
                             : Result<UploadedTree>(store.status());
  Status saved = cache.Save();
  if (!saved.ok()) LOG_WARN("checkpoint hash cache: {}", saved.message());
  if (!uploaded.ok()) return uploaded.status();
  const std::string& name = task.paths.front();
  if (!uploaded->missing.empty()) return Status::NotFound("it is gone");
  LOG_INFO("job {} attempt {}: stored {} ({} bytes, {} sent)", task.job_id, task.attempt, name, uploaded->bytes,
           uploaded->sent_bytes);
  return CheckpointStoredMessage(task.job_id, task.attempt, name, uploaded->manifest_id, uploaded->bytes,
                                 uploaded->sent_bytes);
}

Result<AgentMessage> ResultsSender::SendOutputs(const UploadTask& task) const {
  auto store = store_->At(task.location);
  auto uploaded = store.ok() ? UploadTree(**store, task.root, task.paths) : Result<UploadedTree>(store.status());
  if (!uploaded.ok()) return uploaded.status();
  AgentMessage exit = task.exit;
  auto* exited = exit.mutable_rank_exited();
  exited->set_outputs_manifest(uploaded->manifest_id);
  exited->set_outputs_bytes(uploaded->bytes);
  for (const std::string& path : uploaded->missing) exited->add_outputs_missing(path);
  LOG_INFO("job {} attempt {}: stored outputs ({} bytes, {} missing)", task.job_id, task.attempt, uploaded->bytes,
           uploaded->missing.size());
  return exit;
}

}  // namespace clusterd
