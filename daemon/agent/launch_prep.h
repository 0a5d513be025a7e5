// Makes a launch ready before its ranks start, off the command thread so
// that commands and heartbeats keep flowing meanwhile: its code package
// checked out into the job's working folder, and the newest stored
// checkpoint restored into CLUSTER_CHECKPOINT_DIR, so that ctrain::resume()
// (or any program reading that folder) finds it wherever rank 0 now runs.
// One worker thread; launches are prepared in the order they came, and
// the working folders of attempts done here removed. Thread-safe.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "agent.pb.h"
#include "common/storage/cluster_storage.h"
#include "daemon/agent/package_cache.h"

namespace clusterd {

// Whether a launch needs preparing (a package, or a checkpoint to restore).
bool NeedsPreparing(const LaunchRanks& launch);

// The launch's CLUSTER_CHECKPOINT_DIR on this node: a relative one lives in
// the working folder. Empty when the launch sets none.
std::string CheckpointDirOf(const LaunchRanks& launch);
// The same, were the launch to run in `working_dir`.
std::string CheckpointDirOf(const LaunchRanks& launch, const std::string& working_dir);

// Where an attempt that ships its code runs on this node: a folder of its
// own, <work_dir>/<job id>.attempt-<n>, checked out afresh, so that every
// attempt starts the same wherever it lands: a retry on the same node must
// not resume from checkpoints its failed attempt left there, newer than the
// one the head restores.
std::string WorkingFolder(const std::string& work_dir, const std::string& job_id, int attempt);

// `value` of CLUSTER_CHECKPOINT_DIR resolved against the working folder.
std::string ResolveCheckpointDir(const std::string& value, const std::string& working_dir);

class LaunchPreparer {
 public:
  // `ready` gets the launch with working_dir set; `failed` the reason and,
  // when the store lacks the checkpoint to restore, its manifest id.
  using ReadyFn = std::function<void(const LaunchRanks& launch)>;
  using FailedFn =
      std::function<void(const LaunchRanks& launch, const std::string& error, const std::string& unrestorable)>;

  // Attempts' working folders go to WorkingFolder(work_dir, ...). REQUIRES: packages and
  // store outlive this object.
  LaunchPreparer(std::string work_dir, PackageCache* packages, ClusterStorage* store, ReadyFn ready, FailedFn failed);
  ~LaunchPreparer();

  void Add(LaunchRanks launch);
  // Removes an attempt's working folder (WorkingFolder), on the worker:
  // a large one takes a while.
  void RemoveWorkingFolder(const std::string& folder);
  // How long a launch is tried again while the store is out of reach.
  static constexpr int kStoreCatchUpMs = 10'000;
  // Launches still waiting fail ("stopping"); returns when the worker is done.
  void Stop();

 private:
  void Run();
  // *unrestorable: the checkpoint's manifest id when Restore found it gone.
  Status Prepare(LaunchRanks* launch, std::string* unrestorable);
  Status Restore(const LaunchRanks& launch);
  Status RestoreOnce(const LaunchRanks& launch, const std::string& dir, const std::string& dest);

  std::string work_dir_;
  PackageCache* packages_;
  ClusterStorage* store_;
  ReadyFn ready_;
  FailedFn failed_;
  std::mutex mutex_;
  std::condition_variable wake_;
  // A launch to prepare, or (remove set) a working folder to remove.
  struct Item {
    LaunchRanks launch;
    std::string remove;
  };
  std::deque<Item> queue_;
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace clusterd
