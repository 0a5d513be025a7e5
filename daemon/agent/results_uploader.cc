#include "daemon/agent/results_uploader.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "common/storage/checkpoint_snapshot.h"
#include "common/file_util.h"
#include "common/storage/hash_cache.h"
#include "common/logging.h"
#include "common/threads.h"
#include "common/thread_priority.h"
#include "common/storage/tree_transfer.h"

namespace clusterd {

int64_t CheckpointEpoch(const std::string& name) {
  const std::string prefix = "checkpoint_";
  if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) return -1;
  std::string digits = name.substr(prefix.size());
  if (digits.empty() || digits.size() > 18 || digits.find_first_not_of("0123456789") != std::string::npos) return -1;
  return std::stoll(digits);
}

ResultsUploader::ResultsUploader(ClusterStorage* store, std::string hash_dir, SendFn send_checkpoint, SendFn report_exit,
                                 int64_t final_checkpoint_wait_ms, SendFn send_progress, const WaitableClock* clock)
    : store_(store),
      clock_(clock ? clock : SystemWaitableClock::Shared()),
      hash_dir_(std::move(hash_dir)),
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
  for (Task& task : tasks_) {
    if (task.job_id == job_id && task.attempt == attempt) task.bytes_per_s = 0;
  }
  // The checkpoint under way, its pacer made or not yet (UploadCheckpoint).
  if (pacing_for_ == std::make_pair(job_id, attempt)) {
    unpace_now_ = true;
    if (pacer_now_) pacer_now_->Lift();
  }
}

void ResultsUploader::ReleaseSnapshot(const Task& task) {
  if (task.snapshot_of.empty()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // Shared with the upload under way, or a waiting report of the same
    // folder: a second snapshot would replace, and so lose, the one the
    // upload is being sent from.
    if (current_snapshot_ == std::make_pair(task.snapshot_of, task.paths.front())) return;
    for (const Task& waiting : tasks_) {
      if (waiting.snapshot_of == task.snapshot_of && waiting.paths == task.paths) return;
    }
  }
  RemoveSnapshot(task.snapshot_of, task.paths.front());
}

void ResultsUploader::StoreCheckpoint(const std::string& job_id, int attempt, const std::string& checkpoint_dir,
                                      const std::string& checkpoint_path, const std::string& location,
                                      int64_t bytes_per_s) {
  Task task;
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
  std::vector<Task> replaced;
  std::set<std::string> in_use = {task.paths.front()};
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const Task& waiting : tasks_) {
      if (waiting.snapshot_of == checkpoint_dir) in_use.insert(waiting.paths.front());
    }
    if (current_snapshot_.first == checkpoint_dir) in_use.insert(current_snapshot_.second);
    // A newer checkpoint of the same attempt makes a waiting one pointless.
    for (auto it = tasks_.begin(); it != tasks_.end();) {
      bool older = !it->outputs && it->job_id == job_id && it->attempt == attempt;
      if (older && it->paths != task.paths) replaced.push_back(std::move(*it));
      it = older ? tasks_.erase(it) : it + 1;
    }
    tasks_.push_back(std::move(task));
  }
  wake_.notify_all();
  for (const Task& gone : replaced) ReleaseSnapshot(gone);
  // The last one stored stays until the next report (the same folder
  // reported again is linked already, its hash cache entries valid); older
  // ones go now.
  if (!task_snapshot.empty()) RemoveSnapshotsBut(checkpoint_dir, in_use);
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

void ResultsUploader::ReportAfterCheckpoints(AgentMessage exit) {
  Task task;
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
    pending = PendingCheckpoint(job_id, attempt);
    tasks_.push_back(std::move(task));
    wake_.notify_all();
  }
  SayPending(job_id, attempt, pending, 0, 0);
}

std::string ResultsUploader::PendingCheckpoint(const std::string& job_id, int attempt) const {
  if (pacing_for_ == std::make_pair(job_id, attempt)) return current_snapshot_.second;
  std::string name;
  for (const Task& t : tasks_) {
    if (!t.outputs && t.job_id == job_id && t.attempt == attempt) name = t.paths.front();
  }
  return name;
}

bool ResultsUploader::ExitHeldFor(const std::string& job_id, int attempt) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return std::any_of(tasks_.begin(), tasks_.end(), [&](const Task& t) {
    return t.outputs && t.report_by && t.job_id == job_id && t.attempt == attempt;
  });
}

void ResultsUploader::SayPending(const std::string& job_id, int attempt, const std::string& checkpoint, int64_t done,
                                 int64_t total) {
  if (!send_progress_ || checkpoint.empty()) return;
  AgentMessage message;
  ResultsPending* pending = message.mutable_results_pending();
  pending->set_job_id(job_id);
  pending->set_attempt(attempt);
  pending->set_checkpoint(checkpoint);
  pending->set_done_bytes(done);
  pending->set_total_bytes(total);
  send_progress_(message);
}

bool ResultsUploader::StoringCheckpoint(const std::string& job_id, int attempt) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return !PendingCheckpoint(job_id, attempt).empty();
}

namespace {

// What a later try may fix: the store was out of reach (gRPC's UNAVAILABLE
// or a deadline), or another head answered on its address for a while (a
// wrong token: the agent's link waits for the right one too). Anything else
// (a file gone, a refusal) would fail again.
bool WorthRetrying(const Status& status) {
  return status.code() == Status::Code::kUnavailable || status.code() == Status::Code::kUnauthenticated;
}

LiveRank HeldRank(const AgentMessage& exit) {
  LiveRank live;
  live.set_job_id(exit.rank_exited().job_id());
  live.set_attempt(exit.rank_exited().attempt());
  live.set_rank(exit.rank_exited().rank());
  return live;
}

}  // namespace

bool ResultsUploader::Holds(const std::string& job_id, int attempt) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (pacing_for_ == std::make_pair(job_id, attempt)) return true;
  if (held_now_ && held_now_->job_id() == job_id && held_now_->attempt() == attempt) return true;
  return std::any_of(tasks_.begin(), tasks_.end(),
                     [&](const Task& task) { return task.job_id == job_id && task.attempt == attempt; });
}

std::vector<LiveRank> ResultsUploader::HeldRanks() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<LiveRank> held;
  if (held_now_) held.push_back(*held_now_);
  for (const Task& task : tasks_) {
    if (task.outputs) held.push_back(HeldRank(task.exit));
  }
  return held;
}

void ResultsUploader::Run(bool outputs) {
  CountedThread counted(outputs ? "outputs-up" : "uploader");
  LowerThisThreadsPriority(/*idle_io=*/true);  // training owns the cores and the disk
  int retry_ms = kFirstRetryMs;
  // Outputs wait for their own attempt's checkpoints (rank 0 reported
  // them first, and its exit lifted their pace): the job ends with its last
  // checkpoint stored. Never for another job's.
  auto checkpoint_pending = [this](const Task& outputs_task) {
    return !PendingCheckpoint(outputs_task.job_id, outputs_task.attempt).empty();
  };
  auto overdue = [this](const Task& t) { return t.report_by && clock_->NowMicros() >= *t.report_by; };
  auto mine = [&] {
    return std::find_if(tasks_.begin(), tasks_.end(), [&](const Task& t) {
      return t.outputs == outputs && (!outputs || !checkpoint_pending(t) || overdue(t));
    });
  };
  // The soonest an exit held for its checkpoints is due, whatever they do.
  auto next_due = [&] {
    std::optional<Micros> due;
    for (const Task& t : tasks_) {
      if (outputs && t.report_by && (!due || *t.report_by < *due)) due = t.report_by;
    }
    return due;
  };
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    auto any_left = [&] {
      return std::any_of(tasks_.begin(), tasks_.end(), [&](const Task& t) { return t.outputs == outputs; });
    };
    // Stopping, it still finishes what is queued (outputs once their
    // checkpoints are done).
    // Each wake-up may have brought a held exit with a deadline of its own.
    while (mine() == tasks_.end() && !(stopping_ && !any_left())) {
      if (auto due = next_due()) {
        // Until then, or until a wake-up brings work or an earlier deadline.
        clock_->WaitUntil(wake_, lock, *due, [&] {
          return mine() != tasks_.end() || (stopping_ && !any_left()) || next_due() != due;
        });
      } else {
        wake_.wait(lock);
      }
    }
    auto next = mine();
    if (next == tasks_.end()) return;
    Task task = std::move(*next);
    tasks_.erase(next);
    if (task.outputs && task.report_by && checkpoint_pending(task)) {
      // The wait is over: the job ends with the checkpoint stored before,
      // and its record says why the last one is not (its upload goes on).
      AgentMessage late;
      CheckpointStored* refused = late.mutable_checkpoint_stored();
      refused->set_job_id(task.job_id);
      refused->set_attempt(task.attempt);
      refused->set_name(PendingCheckpoint(task.job_id, task.attempt));
      refused->set_epoch(CheckpointEpoch(refused->name()));
      refused->set_error(fmt::format("still being stored {} s after rank 0 exited (final_checkpoint_wait_ms): the job "
                                     "ended with the checkpoint stored before it",
                                     final_checkpoint_wait_ms_ / 1000.0));
      LOG_WARN("job {} attempt {}: {} {}", task.job_id, task.attempt, refused->name(), refused->error());
      lock.unlock();
      send_checkpoint_(late);
      report_exit_(task.exit);
      lock.lock();
      continue;
    }
    if (task.outputs) {
      held_now_ = HeldRank(task.exit);
    } else {
      pacing_for_ = {task.job_id, task.attempt};
      unpace_now_ = false;
      current_snapshot_ = {task.snapshot_of, task.paths.front()};
    }
    lock.unlock();
    Status failed = task.outputs ? UploadOutputs(task) : UploadCheckpoint(task);
    lock.lock();
    if (!task.outputs) {
      pacing_for_ = {};
      current_snapshot_ = {};
      wake_.notify_all();  // outputs of its attempt may go now
    }
    if (failed.ok()) {
      if (task.outputs) held_now_.reset();
      retry_ms = kFirstRetryMs;
      if (unreachable_) LOG_INFO("the store answers again: job {} attempt {} stored", task.job_id, task.attempt);
      unreachable_ = false;
      continue;
    }
    const Micros now = clock_->NowMicros();
    if (task.tries == 0) task.failing_since = now;
    // A program may go on writing into a checkpoint for a moment after
    // reporting it: one that changed is tried again once it settles, rather
    // than given up at once and the job left with none stored.
    if (!stopping_ && ChangedUnderUpload(failed) && task.changed < kChangedTries) {
      if (task.changed++ == 0) {
        LOG_WARN("job {} attempt {}: {} changed while it was being stored; trying again in {} ms, up to {} times",
                 task.job_id, task.attempt, task.outputs ? "outputs" : "checkpoint " + task.paths.front(),
                 kChangedRetryMs, kChangedTries);
      }
      Requeue(std::move(task));
      if (outputs) held_now_.reset();
      clock_->WaitForMillis(wake_, lock, kChangedRetryMs, [this] { return stopping_; });
      continue;
    }
    if (!stopping_ && WorthRetrying(failed) && now - task.failing_since < Micros{kGiveUpAfterMs} * 1000) {
      // Once per outage, not per checkpoint that replaces a waiting one.
      if (task.tries++ == 0 && !unreachable_) {
        LOG_WARN("job {} attempt {}: {} not stored yet: {}; trying again for up to {} s", task.job_id, task.attempt,
                 task.outputs ? "outputs" : "checkpoint " + task.paths.front(), failed.message(),
                 kGiveUpAfterMs / 1000);
      }
      unreachable_ = true;
      Requeue(std::move(task));
      if (outputs) held_now_.reset();
      // Stop or a Nudge ends the wait early. This kind's first task is this
      // one (or the newer checkpoint that replaced it): what came after
      // waits behind it.
      const uint64_t seen = nudges_;
      const bool nudged =
          clock_->WaitForMillis(wake_, lock, retry_ms, [&] { return stopping_ || nudges_ != seen; });
      retry_ms = nudged ? kFirstRetryMs : std::min(retry_ms * 2, kMaxRetryMs);
      continue;
    }
    lock.unlock();
    ReleaseSnapshot(task);
    GiveUp(std::move(task), failed);
    lock.lock();
    if (outputs) held_now_.reset();
  }
}

void ResultsUploader::Requeue(Task task) {
  if (!task.outputs) {
    for (const Task& waiting : tasks_) {
      if (!waiting.outputs && waiting.job_id == task.job_id && waiting.attempt == task.attempt) {
        // Replaced by a newer one meanwhile. REQUIRES: mutex_ held, so the
        // snapshot goes here unless the newer report shares it.
        if (!task.snapshot_of.empty() && waiting.paths != task.paths) RemoveSnapshot(task.snapshot_of, task.paths.front());
        return;
      }
    }
  }
  tasks_.push_front(std::move(task));
}

void ResultsUploader::GiveUp(Task task, const Status& why) {
  if (!task.outputs) {
    // The previous stored checkpoint stays the one a retry restores. The
    // head is told why, for the job's record (a checkpoint holding an
    // absolute symlink, say), not only this node's log.
    LOG_WARN("job {} attempt {}: checkpoint {} not stored: {}", task.job_id, task.attempt, task.paths.front(),
             why.message());
    AgentMessage message;
    CheckpointStored* given_up = message.mutable_checkpoint_stored();
    given_up->set_job_id(task.job_id);
    given_up->set_attempt(task.attempt);
    given_up->set_name(task.paths.front());
    given_up->set_epoch(CheckpointEpoch(task.paths.front()));
    given_up->set_error(why.message());
    send_checkpoint_(message);
    return;
  }
  task.exit.mutable_rank_exited()->set_outputs_error(why.message());
  LOG_WARN("job {} attempt {}: outputs not stored: {}", task.job_id, task.attempt, why.message());
  report_exit_(task.exit);
}

Status ResultsUploader::UploadCheckpoint(Task& task) {
  HashCache cache = HashCache::Load(hash_dir_, task.root);
  TreeUploadOptions options;
  options.cache = &cache;
  RatePacer pacer(task.bytes_per_s, clock_);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_ || unpace_now_) pacer.Lift();
    pacer_now_ = &pacer;
  }
  // Called after each chunk of a piece, one call at a time: waiting here
  // holds back every stream of the upload.
  int64_t paced = 0;
  Micros said = clock_->NowMicros();
  options.progress = [&](int64_t done, int64_t total) {
    pacer.TakeAndWait(done - paced);
    paced = done;
    // While rank 0's exit waits for this checkpoint, the head's record of
    // the job says how far it is.
    const Micros now = clock_->NowMicros();
    if (send_progress_ && now - said >= Micros{kProgressEveryMs} * 1000) {
      said = now;
      if (ExitHeldFor(task.job_id, task.attempt)) SayPending(task.job_id, task.attempt, task.paths.front(), done, total);
    }
  };
  auto store = store_->At(task.location);
  auto uploaded = store.ok() ? UploadTree(**store, task.root, task.paths, options)
                             : Result<UploadedTree>(store.status());
  {
    std::lock_guard<std::mutex> lock(mutex_);
    pacer_now_ = nullptr;
  }
  if (pacer.lifted()) task.bytes_per_s = 0;  // a try again goes at full speed too
  Status saved = cache.Save();
  if (!saved.ok()) LOG_WARN("checkpoint hash cache: {}", saved.message());
  if (!uploaded.ok()) return uploaded.status();
  const std::string& name = task.paths.front();
  if (!uploaded->missing.empty()) return Status::NotFound("it is gone");
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
  return Status::Ok();
}

Status ResultsUploader::UploadOutputs(Task& task) {
  if (task.paths.empty()) {  // ReportAfterCheckpoints: its checkpoints are done
    report_exit_(task.exit);
    return Status::Ok();
  }
  auto store = store_->At(task.location);
  auto uploaded = store.ok() ? UploadTree(**store, task.root, task.paths) : Result<UploadedTree>(store.status());
  if (!uploaded.ok()) return uploaded.status();
  auto* exited = task.exit.mutable_rank_exited();
  exited->set_outputs_manifest(uploaded->manifest_id);
  exited->set_outputs_bytes(uploaded->bytes);
  for (const std::string& path : uploaded->missing) exited->add_outputs_missing(path);
  LOG_INFO("job {} attempt {}: stored outputs ({} bytes, {} missing)", task.job_id, task.attempt, uploaded->bytes,
           uploaded->missing.size());
  report_exit_(task.exit);
  return Status::Ok();
}

}  // namespace clusterd
