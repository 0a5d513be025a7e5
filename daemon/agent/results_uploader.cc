#include "daemon/agent/results_uploader.h"

#include <fmt/format.h>

#include "common/file_util.h"
#include "common/hash_cache.h"
#include "common/logging.h"
#include "common/thread_name.h"
#include "common/thread_priority.h"
#include "common/tree_transfer.h"

namespace clusterd {

int64_t CheckpointEpoch(const std::string& name) {
  const std::string prefix = "checkpoint_";
  if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) return -1;
  std::string digits = name.substr(prefix.size());
  if (digits.empty() || digits.size() > 18 || digits.find_first_not_of("0123456789") != std::string::npos) return -1;
  return std::stoll(digits);
}

ResultsUploader::ResultsUploader(ClusterStorage* store, std::string hash_dir, SendFn send_checkpoint, SendFn report_exit)
    : store_(store),
      hash_dir_(std::move(hash_dir)),
      send_checkpoint_(std::move(send_checkpoint)),
      report_exit_(std::move(report_exit)),
      worker_([this] { Run(); }) {}

ResultsUploader::~ResultsUploader() { Stop(); }

void ResultsUploader::Stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (worker_.joinable()) worker_.join();
}

void ResultsUploader::StoreCheckpoint(const std::string& job_id, int attempt, const std::string& checkpoint_dir,
                                      const std::string& checkpoint_path, const std::string& location) {
  Task task;
  task.location = location;
  task.job_id = job_id;
  task.attempt = attempt;
  task.root = checkpoint_dir;
  task.paths = {BaseName(checkpoint_path)};
  std::lock_guard<std::mutex> lock(mutex_);
  // A newer checkpoint of the same attempt makes a waiting one pointless.
  for (auto it = tasks_.begin(); it != tasks_.end();) {
    bool older = !it->outputs && it->job_id == job_id && it->attempt == attempt;
    it = older ? tasks_.erase(it) : it + 1;
  }
  tasks_.push_back(std::move(task));
  wake_.notify_all();
}

void ResultsUploader::StoreOutputs(AgentMessage exit, const std::string& work_dir,
                                   const std::vector<std::string>& outputs, const std::string& location) {
  Task task;
  task.location = location;
  task.exit = std::move(exit);
  task.job_id = task.exit.rank_exited().job_id();
  task.attempt = task.exit.rank_exited().attempt();
  task.root = work_dir;
  task.paths = outputs;
  task.outputs = true;
  std::lock_guard<std::mutex> lock(mutex_);
  tasks_.push_back(std::move(task));
  wake_.notify_all();
}

void ResultsUploader::Run() {
  NameThisThread("uploader");
  LowerThisThreadsPriority(/*idle_io=*/true);  // training owns the cores and the disk
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    wake_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
    if (tasks_.empty()) return;
    Task task = std::move(tasks_.front());
    tasks_.pop_front();
    lock.unlock();
    if (task.outputs) {
      UploadOutputs(std::move(task));
    } else {
      UploadCheckpoint(task);
    }
    lock.lock();
  }
}

void ResultsUploader::UploadCheckpoint(const Task& task) {
  HashCache cache = HashCache::Load(hash_dir_, task.root);
  TreeUploadOptions options;
  options.cache = &cache;
  auto store = store_->At(task.location);
  auto uploaded = store.ok() ? UploadTree(**store, task.root, task.paths, options)
                             : Result<UploadedTree>(store.status());
  Status saved = cache.Save();
  if (!saved.ok()) LOG_WARN("checkpoint hash cache: {}", saved.message());
  const std::string& name = task.paths.front();
  if (!uploaded.ok() || !uploaded->missing.empty()) {
    // The previous stored checkpoint stays the one a retry restores.
    LOG_WARN("job {} attempt {}: checkpoint {} not stored: {}", task.job_id, task.attempt, name,
             uploaded.ok() ? "it is gone" : uploaded.status().message());
    return;
  }
  AgentMessage message;
  auto* stored = message.mutable_checkpoint_stored();
  stored->set_job_id(task.job_id);
  stored->set_attempt(task.attempt);
  stored->set_manifest_id(uploaded->manifest_id);
  stored->set_name(name);
  stored->set_epoch(CheckpointEpoch(name));
  stored->set_bytes(uploaded->bytes);
  stored->set_sent_bytes(uploaded->sent_bytes);
  LOG_INFO("job {} attempt {}: stored {} ({} bytes, {} sent)", task.job_id, task.attempt, name, uploaded->bytes,
           uploaded->sent_bytes);
  send_checkpoint_(message);
}

void ResultsUploader::UploadOutputs(Task task) {
  auto* exited = task.exit.mutable_rank_exited();
  auto store = store_->At(task.location);
  auto uploaded = store.ok() ? UploadTree(**store, task.root, task.paths) : Result<UploadedTree>(store.status());
  if (uploaded.ok()) {
    exited->set_outputs_manifest(uploaded->manifest_id);
    exited->set_outputs_bytes(uploaded->bytes);
    for (const std::string& path : uploaded->missing) exited->add_outputs_missing(path);
    LOG_INFO("job {} attempt {}: stored outputs ({} bytes, {} missing)", task.job_id, task.attempt, uploaded->bytes,
             uploaded->missing.size());
  } else {
    exited->set_outputs_error(uploaded.status().message());
    LOG_WARN("job {} attempt {}: outputs not stored: {}", task.job_id, task.attempt, uploaded.status().message());
  }
  report_exit_(task.exit);
}

}  // namespace clusterd
