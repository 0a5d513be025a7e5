#include "daemon/agent/launch_prep.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "common/file_util.h"
#include "common/logging.h"
#include "common/threads.h"
#include "common/storage/tree_transfer.h"

namespace clusterd {

bool NeedsPreparing(const LaunchRanks& launch) { return !launch.package_id().empty() || launch.has_restore(); }

std::string WorkingFolder(const std::string& work_dir, const std::string& job_id, int attempt) {
  return fmt::format("{}/{}.attempt-{}", work_dir, job_id, attempt);
}

std::string ResolveCheckpointDir(const std::string& value, const std::string& working_dir) {
  if (value.empty() || value[0] == '/' || working_dir.empty()) return value;
  return JoinPath(working_dir, value);
}

std::string CheckpointDirOf(const LaunchRanks& launch) { return CheckpointDirOf(launch, launch.working_dir()); }

std::string CheckpointDirOf(const LaunchRanks& launch, const std::string& working_dir) {
  // Shared by the launch's ranks (LaunchRanks.env), or set per rank.
  const auto& shared = launch.env();
  auto it = shared.find("CLUSTER_CHECKPOINT_DIR");
  if (it != shared.end()) return ResolveCheckpointDir(it->second, working_dir);
  if (launch.ranks_size() == 0) return "";
  const auto& own = launch.ranks(0).env();
  it = own.find("CLUSTER_CHECKPOINT_DIR");
  return it == own.end() ? "" : ResolveCheckpointDir(it->second, working_dir);
}

LaunchPreparer::LaunchPreparer(std::string work_dir, PackageCache* packages, ClusterStorage* store, ReadyFn ready,
                               FailedFn failed)
    : work_dir_(std::move(work_dir)),
      packages_(packages),
      store_(store),
      ready_(std::move(ready)),
      failed_(std::move(failed)),
      worker_([this] { Run(); }) {}

LaunchPreparer::~LaunchPreparer() { Stop(); }

void LaunchPreparer::Add(LaunchRanks launch) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back({std::move(launch), ""});
  }
  wake_.notify_all();
}

void LaunchPreparer::RemoveWorkingFolder(const std::string& folder) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back({LaunchRanks(), folder});
  }
  wake_.notify_all();
}

void LaunchPreparer::Stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (worker_.joinable()) worker_.join();
}

void LaunchPreparer::Run() {
  CountedThread counted("launch-prep");
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, nothing left
    Item item = std::move(queue_.front());
    queue_.pop_front();
    bool stopping = stopping_;
    lock.unlock();
    if (!item.remove.empty()) {
      // Stopping, the agent removes all of its working folders itself.
      Status removed = stopping ? Status::Ok() : RemoveTree(item.remove);
      if (!removed.ok()) LOG_WARN("a working folder could not be removed: {}", removed.message());
      lock.lock();
      continue;
    }
    LaunchRanks& launch = item.launch;
    std::string unrestorable;
    Status ready = stopping ? Status::Unavailable("the node agent is stopping") : Prepare(&launch, &unrestorable);
    // The head asked for this launch a moment ago, so its store is there:
    // a channel still backing off from the head's restart catches up
    // (head_channel.h) within the agent's reconnect backoff.
    for (int waited_ms = 0, delay_ms = 100; !ready.ok() && ready.code() == Status::Code::kUnavailable &&
                                            waited_ms < kStoreCatchUpMs;
         waited_ms += delay_ms, delay_ms = std::min(delay_ms * 2, 1000)) {
      lock.lock();
      if (wake_.wait_for(lock, std::chrono::milliseconds(delay_ms), [this] { return stopping_; })) break;
      lock.unlock();
      ready = Prepare(&launch, &unrestorable);
    }
    if (lock.owns_lock()) lock.unlock();
    if (ready.ok()) {
      ready_(launch);
    } else {
      failed_(launch, ready.message(), unrestorable);
    }
    lock.lock();
  }
}

Status LaunchPreparer::Prepare(LaunchRanks* launch, std::string* unrestorable) {
  unrestorable->clear();
  if (!launch->package_id().empty()) {
    std::string work_dir = WorkingFolder(work_dir_, launch->job_id(), launch->attempt());
    // Rank 0 writes the outputs (rank 0's node alone is told them).
    const std::vector<std::string> outputs(launch->outputs().begin(), launch->outputs().end());
    RETURN_IF_ERROR(packages_->Checkout(launch->package_id(), launch->package_bytes(), work_dir, outputs));
    launch->set_working_dir(work_dir);
  }
  if (!launch->has_restore()) return Status::Ok();
  Status restored = Restore(*launch);
  // A checkpoint whose piece the head's store lost (or dropped as corrupt)
  // is named to the head, so that it stops being the newest stored and
  // later attempts do not fail to restore it too.
  if (restored.code() == Status::Code::kNotFound) *unrestorable = launch->restore().manifest_id();
  return restored;
}

Status LaunchPreparer::Restore(const LaunchRanks& launch) {
  const CheckpointRef& checkpoint = launch.restore();
  std::string dir = CheckpointDirOf(launch);
  if (dir.empty()) return Status::Ok();  // the job keeps no checkpoints here
  std::string dest = JoinPath(dir, checkpoint.name());
  struct stat st {};
  if (lstat(dest.c_str(), &st) == 0) return Status::Ok();  // this node wrote it, or restored it before
  RETURN_IF_ERROR(MakeDirs(dir));
  Status restored = RestoreOnce(launch, dir, dest);
  if (restored.code() == Status::Code::kCorruption) {
    // A transfer can go bad; fetch once more before blaming the store's
    // copy. (The head has checked its copy meanwhile and dropped it if it
    // is bad: then the second fetch finds it gone, NotFound.)
    LOG_WARN("job {} attempt {}: {}; restoring it again", launch.job_id(), launch.attempt(), restored.message());
    const Status first = restored;
    restored = RestoreOnce(launch, dir, dest);
    if (restored.code() == Status::Code::kNotFound) restored = Status::NotFound(first.message());  // it says why
  }
  if (!restored.ok()) return restored.WithContext("restoring checkpoint " + checkpoint.name());
  LOG_INFO("job {} attempt {}: restored {} ({} bytes) into {}", launch.job_id(), launch.attempt(), checkpoint.name(),
           checkpoint.bytes(), dir);
  return Status::Ok();
}

Status LaunchPreparer::RestoreOnce(const LaunchRanks& launch, const std::string& dir, const std::string& dest) {
  const CheckpointRef& checkpoint = launch.restore();
  // The manifest holds the folder under its own name: restore beside the
  // checkpoints, then move it in whole.
  std::string staging = fmt::format("{}/.restore-{}-{}", dir, checkpoint.name(), getpid());
  RETURN_IF_ERROR(RemoveTree(staging));
  // From the job's own S3 location when it has one, else the cluster's store.
  auto store = store_->At(launch.checkpoint_storage());
  Status restored = store.ok() ? DownloadTree(**store, checkpoint.manifest_id(), staging) : store.status();
  if (restored.ok() && rename((staging + "/" + checkpoint.name()).c_str(), dest.c_str()) != 0) {
    restored = Status::IOError(fmt::format("cannot move the restored {} into {}: {}", checkpoint.name(), dir,
                                           std::strerror(errno)));
  }
  RemoveTree(staging);
  return restored;
}

}  // namespace clusterd
