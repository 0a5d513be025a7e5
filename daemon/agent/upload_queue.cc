#include "daemon/agent/upload_queue.h"

#include <algorithm>

namespace clusterd {

namespace {

bool SameAttempt(const UploadTask& task, const std::string& job_id, int attempt) {
  return task.job_id == job_id && task.attempt == attempt;
}

LiveRank HeldRank(const AgentMessage& exit) {
  LiveRank live;
  live.set_job_id(exit.rank_exited().job_id());
  live.set_attempt(exit.rank_exited().attempt());
  live.set_rank(exit.rank_exited().rank());
  return live;
}

}  // namespace

std::vector<UploadTask> UploadQueue::AddCheckpoint(UploadTask task) {
  std::vector<UploadTask> replaced;
  // A newer checkpoint of the same attempt makes a waiting one pointless.
  for (auto it = tasks_.begin(); it != tasks_.end();) {
    bool older = !it->outputs && SameAttempt(*it, task.job_id, task.attempt);
    if (older && it->paths != task.paths) replaced.push_back(std::move(*it));
    it = older ? tasks_.erase(it) : it + 1;
  }
  tasks_.push_back(std::move(task));
  return replaced;
}

std::optional<UploadTask> UploadQueue::Requeue(UploadTask task) {
  if (!task.outputs) {
    for (const UploadTask& waiting : tasks_) {
      if (!waiting.outputs && SameAttempt(waiting, task.job_id, task.attempt)) {
        if (!task.snapshot_of.empty() && waiting.paths != task.paths) return task;
        return std::nullopt;
      }
    }
  }
  tasks_.push_front(std::move(task));
  return std::nullopt;
}

void UploadQueue::Unpace(const std::string& job_id, int attempt) {
  for (UploadTask& task : tasks_) {
    if (SameAttempt(task, job_id, attempt)) task.bytes_per_s = 0;
  }
}

bool UploadQueue::Ready(const UploadTask& task, bool outputs, Micros now) const {
  if (task.outputs != outputs) return false;
  // Outputs wait for their own attempt's checkpoints (rank 0 reported
  // them first, and its exit lifted their pace): the job ends with its last
  // checkpoint stored. Never for another job's.
  if (!outputs || PendingCheckpoint(task.job_id, task.attempt).empty()) return true;
  return task.report_by && now >= *task.report_by;
}

std::optional<UploadTask> UploadQueue::TakeNext(bool outputs, Micros now) {
  auto next = std::find_if(tasks_.begin(), tasks_.end(), [&](const UploadTask& t) { return Ready(t, outputs, now); });
  if (next == tasks_.end()) return std::nullopt;
  UploadTask task = std::move(*next);
  tasks_.erase(next);
  return task;
}

bool UploadQueue::HasNext(bool outputs, Micros now) const {
  return std::any_of(tasks_.begin(), tasks_.end(), [&](const UploadTask& t) { return Ready(t, outputs, now); });
}

bool UploadQueue::AnyQueued(bool outputs) const {
  return std::any_of(tasks_.begin(), tasks_.end(), [&](const UploadTask& t) { return t.outputs == outputs; });
}

std::optional<Micros> UploadQueue::NextDue(bool outputs) const {
  std::optional<Micros> due;
  for (const UploadTask& t : tasks_) {
    if (outputs && t.report_by && (!due || *t.report_by < *due)) due = t.report_by;
  }
  return due;
}

void UploadQueue::StartCheckpoint(const UploadTask& task) {
  checkpoint_now_ = {task.job_id, task.attempt};
  snapshot_now_ = {task.snapshot_of, task.paths.front()};
}

void UploadQueue::FinishCheckpoint() {
  checkpoint_now_ = {};
  snapshot_now_ = {};
}

void UploadQueue::StartOutputs(const UploadTask& task) { outputs_now_ = HeldRank(task.exit); }

std::string UploadQueue::PendingCheckpoint(const std::string& job_id, int attempt) const {
  if (CheckpointUnderWay(job_id, attempt)) return snapshot_now_.second;
  std::string name;
  for (const UploadTask& t : tasks_) {
    if (!t.outputs && SameAttempt(t, job_id, attempt)) name = t.paths.front();
  }
  return name;
}

bool UploadQueue::CheckpointUnderWay(const std::string& job_id, int attempt) const {
  return checkpoint_now_ == std::make_pair(job_id, attempt);
}

bool UploadQueue::ExitHeldFor(const std::string& job_id, int attempt) const {
  return std::any_of(tasks_.begin(), tasks_.end(), [&](const UploadTask& t) {
    return t.outputs && t.report_by && SameAttempt(t, job_id, attempt);
  });
}

bool UploadQueue::Holds(const std::string& job_id, int attempt) const {
  if (CheckpointUnderWay(job_id, attempt)) return true;
  if (outputs_now_ && outputs_now_->job_id() == job_id && outputs_now_->attempt() == attempt) return true;
  return std::any_of(tasks_.begin(), tasks_.end(), [&](const UploadTask& t) { return SameAttempt(t, job_id, attempt); });
}

std::vector<LiveRank> UploadQueue::HeldRanks() const {
  std::vector<LiveRank> held;
  if (outputs_now_) held.push_back(*outputs_now_);
  for (const UploadTask& task : tasks_) {
    if (task.outputs) held.push_back(HeldRank(task.exit));
  }
  return held;
}

bool UploadQueue::SharesSnapshot(const UploadTask& task) const {
  if (snapshot_now_ == std::make_pair(task.snapshot_of, task.paths.front())) return true;
  return std::any_of(tasks_.begin(), tasks_.end(), [&](const UploadTask& waiting) {
    return waiting.snapshot_of == task.snapshot_of && waiting.paths == task.paths;
  });
}

std::set<std::string> UploadQueue::SnapshotsInUse(const std::string& checkpoint_dir) const {
  std::set<std::string> in_use;
  for (const UploadTask& waiting : tasks_) {
    if (waiting.snapshot_of == checkpoint_dir) in_use.insert(waiting.paths.front());
  }
  if (snapshot_now_.first == checkpoint_dir) in_use.insert(snapshot_now_.second);
  return in_use;
}

}  // namespace clusterd
