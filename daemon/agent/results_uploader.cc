#include "daemon/agent/results_uploader.h"

#include <algorithm>
#include <set>

#include "common/storage/checkpoint_snapshot.h"
#include "common/file_util.h"
#include "common/logging.h"
#include "common/threads.h"
#include "common/thread_priority.h"
#include "daemon/agent/results_messages.h"

namespace clusterd {

ResultsUploader::ResultsUploader(ClusterStorage* store, std::string hash_dir, SendFn send_checkpoint, SendFn report_exit,
                                 int64_t final_checkpoint_wait_ms, SendFn send_progress, const WaitableClock* clock)
    : sender_(store, std::move(hash_dir)),
      clock_(clock ? clock : SystemWaitableClock::Shared()),
      final_checkpoint_wait_ms_(final_checkpoint_wait_ms),
      send_checkpoint_(std::move(send_checkpoint)),
      report_exit_(std::move(report_exit)),
      send_progress_(std::move(send_progress)),
      checkpoints_worker_([this] { Run(/*outputs=*/false); }),
      outputs_worker_([this] { Run(/*outputs=*/true); }) {}

ResultsUploader::~ResultsUploader() { Stop(); }

void ResultsUploader::Stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    if (pacer_now_) pacer_now_->Lift();  // what is left goes at full speed
  }
  wake_.notify_all();
  if (checkpoints_worker_.joinable()) checkpoints_worker_.join();
  if (outputs_worker_.joinable()) outputs_worker_.join();
}

void ResultsUploader::Nudge() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++nudges_;
  }
  wake_.notify_all();
}

void ResultsUploader::Unpace(const std::string& job_id, int attempt) {
  std::lock_guard<std::mutex> lock(mutex_);
  queue_.Unpace(job_id, attempt);
  // The checkpoint under way, its pacer made or not yet (UploadCheckpoint).
  if (queue_.CheckpointUnderWay(job_id, attempt)) {
    unpace_now_ = true;
    if (pacer_now_) pacer_now_->Lift();
  }
}

void ResultsUploader::ReleaseSnapshot(const UploadTask& task) {
  if (task.snapshot_of.empty()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // Shared with the upload under way, or a waiting report of the same
    // folder: a second snapshot would replace, and so lose, the one the
    // upload is being sent from.
    if (queue_.SharesSnapshot(task)) return;
  }
  RemoveSnapshot(task.snapshot_of, task.paths.front());
}

void ResultsUploader::StoreCheckpoint(const std::string& job_id, int attempt, const std::string& checkpoint_dir,
                                      const std::string& checkpoint_path, const std::string& location,
                                      int64_t bytes_per_s) {
  UploadTask task;
  task.location = location;
  task.bytes_per_s = bytes_per_s;
  task.job_id = job_id;
  task.attempt = attempt;
  task.root = checkpoint_dir;
  task.paths = {BaseName(checkpoint_path)};
  // Now, as reported: the program may prune it while it waits or uploads.
  auto snapshot = SnapshotCheckpoint(checkpoint_dir, task.paths.front());
  std::string task_snapshot;
  if (snapshot.ok()) {
    task.root = *snapshot;
    task.snapshot_of = task_snapshot = checkpoint_dir;
  } else {
    LOG_WARN("job {} attempt {}: checkpoint {} is uploaded from its folder, not a snapshot ({}): a program that prunes "
             "it meanwhile loses it", job_id, attempt, task.paths.front(), snapshot.status().message());
  }
  std::vector<UploadTask> replaced;
  std::set<std::string> in_use = {task.paths.front()};
  {
    std::lock_guard<std::mutex> lock(mutex_);
    in_use.merge(queue_.SnapshotsInUse(checkpoint_dir));
    replaced = queue_.AddCheckpoint(std::move(task));
  }
  wake_.notify_all();
  for (const UploadTask& gone : replaced) ReleaseSnapshot(gone);
  // The last one stored stays until the next report (the same folder
  // reported again is linked already, its hash cache entries valid); older
  // ones go now.
  if (!task_snapshot.empty()) RemoveSnapshotsBut(checkpoint_dir, in_use);
}

void ResultsUploader::StoreOutputs(AgentMessage exit, const std::string& work_dir,
                                   const std::vector<std::string>& outputs, const std::string& location) {
  UploadTask task;
  task.location = location;
  task.exit = std::move(exit);
  task.job_id = task.exit.rank_exited().job_id();
  task.attempt = task.exit.rank_exited().attempt();
  task.root = work_dir;
  task.paths = outputs;
  task.outputs = true;
  std::lock_guard<std::mutex> lock(mutex_);
  queue_.AddOutputs(std::move(task));
  wake_.notify_all();
}

void ResultsUploader::ReportAfterCheckpoints(AgentMessage exit) {
  UploadTask task;
  task.exit = std::move(exit);
  task.job_id = task.exit.rank_exited().job_id();
  task.attempt = task.exit.rank_exited().attempt();
  task.outputs = true;  // nothing to upload: only the exit, on the outputs' worker, after the checkpoints
  task.report_by = clock_->NowMicros() + final_checkpoint_wait_ms_ * 1000;
  const std::string job_id = task.job_id;
  const int attempt = task.attempt;
  std::string pending;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    pending = queue_.PendingCheckpoint(job_id, attempt);
    queue_.AddOutputs(std::move(task));
    wake_.notify_all();
  }
  SayPending(job_id, attempt, pending, 0, 0);
}

bool ResultsUploader::ExitHeldFor(const std::string& job_id, int attempt) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return queue_.ExitHeldFor(job_id, attempt);
}

void ResultsUploader::SayPending(const std::string& job_id, int attempt, const std::string& checkpoint, int64_t done,
                                 int64_t total) {
  if (!send_progress_ || checkpoint.empty()) return;
  send_progress_(ResultsPendingMessage(job_id, attempt, checkpoint, done, total));
}

bool ResultsUploader::StoringCheckpoint(const std::string& job_id, int attempt) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return !queue_.PendingCheckpoint(job_id, attempt).empty();
}

bool ResultsUploader::Holds(const std::string& job_id, int attempt) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return queue_.Holds(job_id, attempt);
}

std::vector<LiveRank> ResultsUploader::HeldRanks() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return queue_.HeldRanks();
}

void ResultsUploader::Run(bool outputs) {
  CountedThread counted(outputs ? "outputs-up" : "uploader");
  LowerThisThreadsPriority(/*idle_io=*/true);  // training owns the cores and the disk
  UploadRetryPolicy retries;
  std::unique_lock<std::mutex> lock(mutex_);
  auto has_next = [&] { return queue_.HasNext(outputs, clock_->NowMicros()); };
  auto done = [&] { return stopping_ && !queue_.AnyQueued(outputs); };
  while (true) {
    // Stopping, it still finishes what is queued (outputs once their
    // checkpoints are done).
    // Each wake-up may have brought a held exit with a deadline of its own.
    while (!has_next() && !done()) {
      if (auto due = queue_.NextDue(outputs)) {
        // Until then, or until a wake-up brings work or an earlier deadline.
        clock_->WaitUntil(wake_, lock, *due,
                          [&] { return has_next() || done() || queue_.NextDue(outputs) != due; });
      } else {
        wake_.wait(lock);
      }
    }
    std::optional<UploadTask> next = queue_.TakeNext(outputs, clock_->NowMicros());
    if (!next) return;
    UploadTask task = std::move(*next);
    if (task.outputs && task.report_by && !queue_.PendingCheckpoint(task.job_id, task.attempt).empty()) {
      ReportLate(std::move(task), lock);
      continue;
    }
    if (task.outputs) {
      queue_.StartOutputs(task);
    } else {
      queue_.StartCheckpoint(task);
      unpace_now_ = false;
    }
    lock.unlock();
    Status failed = task.outputs ? UploadOutputs(task) : UploadCheckpoint(task);
    lock.lock();
    if (!task.outputs) {
      queue_.FinishCheckpoint();
      wake_.notify_all();  // outputs of its attempt may go now
    }
    if (failed.ok()) {
      if (task.outputs) queue_.FinishOutputs();
      retries.Succeeded();
      if (unreachable_) LOG_INFO("the store answers again: job {} attempt {} stored", task.job_id, task.attempt);
      unreachable_ = false;
      continue;
    }
    const UploadRetryPolicy::Decision decision = retries.OnFailure(task, failed, clock_->NowMicros(), stopping_);
    const std::string what = task.outputs ? "outputs" : "checkpoint " + task.paths.front();
    if (decision.action == UploadRetryPolicy::Action::kChangedTryAgain) {
      if (decision.first) {
        LOG_WARN("job {} attempt {}: {} changed while it was being stored; trying again in {} ms, up to {} times",
                 task.job_id, task.attempt, what, decision.wait_ms, UploadRetryPolicy::kChangedTries);
      }
      Requeue(std::move(task));
      if (outputs) queue_.FinishOutputs();
      clock_->WaitForMillis(wake_, lock, decision.wait_ms, [this] { return stopping_; });
      continue;
    }
    if (decision.action == UploadRetryPolicy::Action::kUnreachableTryAgain) {
      // Once per outage, not per checkpoint that replaces a waiting one.
      if (decision.first && !unreachable_) {
        LOG_WARN("job {} attempt {}: {} not stored yet: {}; trying again for up to {} s", task.job_id, task.attempt,
                 what, failed.message(), UploadRetryPolicy::kGiveUpAfterMs / 1000);
      }
      unreachable_ = true;
      Requeue(std::move(task));
      if (outputs) queue_.FinishOutputs();
      // Stop or a Nudge ends the wait early. This kind's first task is this
      // one (or the newer checkpoint that replaced it): what came after
      // waits behind it.
      const uint64_t seen = nudges_;
      retries.Waited(
          clock_->WaitForMillis(wake_, lock, decision.wait_ms, [&] { return stopping_ || nudges_ != seen; }));
      continue;
    }
    lock.unlock();
    ReleaseSnapshot(task);
    GiveUp(std::move(task), failed);
    lock.lock();
    if (outputs) queue_.FinishOutputs();
  }
}

void ResultsUploader::ReportLate(UploadTask task, std::unique_lock<std::mutex>& lock) {
  // The wait is over: the job ends with the checkpoint stored before,
  // and its record says why the last one is not (its upload goes on).
  AgentMessage late = CheckpointLateMessage(task.job_id, task.attempt,
                                            queue_.PendingCheckpoint(task.job_id, task.attempt),
                                            final_checkpoint_wait_ms_);
  const CheckpointStored& refused = late.checkpoint_stored();
  LOG_WARN("job {} attempt {}: {} {}", task.job_id, task.attempt, refused.name(), refused.error());
  lock.unlock();
  send_checkpoint_(late);
  report_exit_(task.exit);
  lock.lock();
}

void ResultsUploader::Requeue(UploadTask task) {
  // Replaced by a newer one meanwhile. REQUIRES: mutex_ held, so the
  // snapshot goes here unless the newer report shares it.
  if (auto dropped = queue_.Requeue(std::move(task))) RemoveSnapshot(dropped->snapshot_of, dropped->paths.front());
}

void ResultsUploader::Refuse(const std::string& job_id, int attempt, const std::string& checkpoint_path,
                             const std::string& why) {
  const std::string name = BaseName(checkpoint_path);
  LOG_WARN("job {} attempt {}: checkpoint {} not stored: {}", job_id, attempt, name, why);
  send_checkpoint_(CheckpointNotStoredMessage(job_id, attempt, name, why));
}

void ResultsUploader::GiveUp(UploadTask task, const Status& why) {
  if (!task.outputs) {
    // The previous stored checkpoint stays the one a retry restores. The
    // head is told why, for the job's record (a checkpoint holding an
    // absolute symlink, say), not only this node's log.
    Refuse(task.job_id, task.attempt, task.paths.front(), why.message());
    return;
  }
  task.exit.mutable_rank_exited()->set_outputs_error(why.message());
  LOG_WARN("job {} attempt {}: outputs not stored: {}", task.job_id, task.attempt, why.message());
  report_exit_(task.exit);
}

Status ResultsUploader::UploadCheckpoint(UploadTask& task) {
  RatePacer pacer(task.bytes_per_s, clock_);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_ || unpace_now_) pacer.Lift();
    pacer_now_ = &pacer;
  }
  Micros said = clock_->NowMicros();
  auto stored = sender_.SendCheckpoint(task, pacer, [&](int64_t done, int64_t total) {
    // While rank 0's exit waits for this checkpoint, the head's record of
    // the job says how far it is.
    const Micros now = clock_->NowMicros();
    if (send_progress_ && now - said >= Micros{kProgressEveryMs} * 1000) {
      said = now;
      if (ExitHeldFor(task.job_id, task.attempt)) SayPending(task.job_id, task.attempt, task.paths.front(), done, total);
    }
  });
  {
    std::lock_guard<std::mutex> lock(mutex_);
    pacer_now_ = nullptr;
  }
  if (pacer.lifted()) task.bytes_per_s = 0;  // a try again goes at full speed too
  if (!stored.ok()) return stored.status();
  send_checkpoint_(*stored);
  return Status::Ok();
}

Status ResultsUploader::UploadOutputs(UploadTask& task) {
  if (task.paths.empty()) {  // ReportAfterCheckpoints: its checkpoints are done
    report_exit_(task.exit);
    return Status::Ok();
  }
  auto exit = sender_.SendOutputs(task);
  if (!exit.ok()) return exit.status();
  report_exit_(*exit);
  return Status::Ok();
}

}  // namespace clusterd
