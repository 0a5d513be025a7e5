// What rank 0 leaves on this node, sent to the head's store in the
// background so that it survives the node: each checkpoint it reports
// (only the newest still waiting, if several come faster than they can be
// sent; training never waits), and its outputs once it exits 0 (before the
// exit is reported, so the head can keep them with the job's success).
// Two worker threads at low CPU and I/O priority: one sends checkpoints,
// one at a time for all jobs here, the other outputs, so that a job's end
// never waits behind another job's paced checkpoint (a 3-byte output would
// wait out a large checkpoint's upload). What waits and what each attempt
// holds meanwhile is the UploadQueue's (upload_queue.h); when a failed
// upload is tried again, the UploadRetryPolicy's (upload_retry_policy.h);
// the sending itself, the ResultsSender's (results_sender.h). A checkpoint is sent from a
// snapshot of hard links taken when it is reported (checkpoint_snapshot.h),
// so that pruning it meanwhile does not lose it. A checkpoint is sent at
// most at its job's checkpoint.upload_rate while rank 0 trains (RatePacer:
// at full speed the sending takes the cores training needs); once rank 0
// has exited, or the agent stops, what is left goes at full speed. Outputs
// are never paced: the job's end waits for them. Thread-safe.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "agent.pb.h"
#include "common/config.h"
#include "common/storage/cluster_storage.h"
#include "common/rate_pacer.h"
#include "common/status.h"
#include "common/waitable_clock.h"
#include "daemon/agent/results_sender.h"
#include "daemon/agent/upload_queue.h"
#include "daemon/agent/upload_retry_policy.h"

namespace clusterd {

class ResultsUploader {
 public:
  // Sends a message to the head (CheckpointStored), or reports a rank's exit
  // (amended with its outputs) the way the rank runner reports exits.
  using SendFn = std::function<void(const AgentMessage&)>;

  // `hash_dir`: where per-folder hash caches live, so an unchanged file is not read again.
  // `final_checkpoint_wait_ms`: the longest ReportAfterCheckpoints holds an
  // exit; meanwhile `send_progress` (if set) is given a ResultsPending at
  // once and then at most every kProgressEveryMs.
  // `clock`: what it reads time from and waits on (null: the machine's); REQUIRES: outlives it.
  ResultsUploader(ClusterStorage* store, std::string hash_dir, SendFn send_checkpoint, SendFn report_exit,
                  int64_t final_checkpoint_wait_ms = Config{}.final_checkpoint_wait_ms, SendFn send_progress = nullptr,
                  const WaitableClock* clock = nullptr);
  ~ResultsUploader();

  // checkpoint_path is a complete checkpoint folder inside checkpoint_dir.
  // `location`: the job's own S3 location, or "" for the cluster's store.
  // `bytes_per_s`: the most it is sent at (0: no limit).
  void StoreCheckpoint(const std::string& job_id, int attempt, const std::string& checkpoint_dir,
                       const std::string& checkpoint_path, const std::string& location, int64_t bytes_per_s);
  // Rank 0 reported `checkpoint_path` and it will not be stored (`why`):
  // the head is told, as for an upload given up. The job's record says
  // why, and a preempted job waiting for that checkpoint resumes now.
  void Refuse(const std::string& job_id, int attempt, const std::string& checkpoint_path, const std::string& why);
  // Rank 0 of this attempt has exited: its checkpoints, queued or under
  // way, go at full speed (there is no training left to protect).
  void Unpace(const std::string& job_id, int attempt);
  // Uploads `outputs` (paths under work_dir), then reports `exit` with them.
  void StoreOutputs(AgentMessage exit, const std::string& work_dir, const std::vector<std::string>& outputs,
                    const std::string& location);
  // Reports `exit` once the checkpoints of its attempt queued or under way
  // are stored or given up, or after final_checkpoint_wait_ms: the head
  // is then told that the last one was not stored in time (the job's
  // checkpoint_refused), and its upload goes on.
  void ReportAfterCheckpoints(AgentMessage exit);
  // A checkpoint of this attempt is queued or under way.
  bool StoringCheckpoint(const std::string& job_id, int attempt) const;
  // The ranks 0 whose exits wait for their outputs to be stored (queued or
  // under way): still running, as far as the head is concerned.
  std::vector<LiveRank> HeldRanks() const;
  // A checkpoint or outputs of this attempt are queued or under way (its
  // working folder must stay until they are sent).
  bool Holds(const std::string& job_id, int attempt) const;
  // The head is back (its agent registered again): a task waiting to be
  // tried again goes now, not at the end of its back-off.
  void Nudge();
  // Finishes what is queued, then stops (what fails then is not tried again).
  void Stop();

  static constexpr int kChangedTries = UploadRetryPolicy::kChangedTries;
  static constexpr int kChangedRetryMs = UploadRetryPolicy::kChangedRetryMs;
  static constexpr int kProgressEveryMs = 1000;

 private:
  void Run(bool outputs);
  // The task's snapshot goes (given up, or replaced while it waited),
  // unless the upload under way or a waiting task (a newer report of the
  // same folder) shares it.
  void ReleaseSnapshot(const UploadTask& task);
  // Each sends the task (sender_) and tells the head what it stored; a
  // failure is returned for Run to try again or give up on (GiveUp).
  Status UploadCheckpoint(UploadTask& task);
  Status UploadOutputs(UploadTask& task);
  void GiveUp(UploadTask task, const Status& why);
  // The final wait of an exit held for its checkpoints is over: the head is
  // told why the last one is not stored, then the exit is reported.
  // REQUIRES: mutex_ held by `lock`, released meanwhile.
  void ReportLate(UploadTask task, std::unique_lock<std::mutex>& lock);
  // A failed task goes back to the queue unless a newer checkpoint of its
  // attempt came meanwhile. REQUIRES: mutex_ held.
  void Requeue(UploadTask task);
  // An exit of this attempt is held for its checkpoints.
  bool ExitHeldFor(const std::string& job_id, int attempt) const;
  void SayPending(const std::string& job_id, int attempt, const std::string& checkpoint, int64_t done, int64_t total);

  ResultsSender sender_;
  const WaitableClock* clock_;
  int64_t final_checkpoint_wait_ms_;
  SendFn send_checkpoint_;
  SendFn report_exit_;
  SendFn send_progress_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  UploadQueue queue_;
  // The checkpoint under way: whether Unpace came for it, and its pacer
  // once made (Unpace and Stop lift it), else null.
  bool unpace_now_ = false;
  RatePacer* pacer_now_ = nullptr;
  uint64_t nudges_ = 0;               // Nudge calls so far (each worker waits for a new one)
  bool unreachable_ = false;          // said so in the log; said again once the store answers
  bool stopping_ = false;
  std::thread checkpoints_worker_;
  std::thread outputs_worker_;
};

}  // namespace clusterd
