#include "common/prefetch_queue.h"

namespace clusterd {

Status PrefetchQueue::Next(std::string_view* piece) {
  *piece = {};
  std::unique_lock<std::mutex> lock(mutex_);
  if (!current_.empty()) {
    current_.clear();  // keeps its capacity
    free_.push_back(std::move(current_));
  }
  current_.clear();
  changed_.wait(lock, [this] { return !ready_.empty() || ended_; });
  if (ready_.empty()) return end_status_;  // OK at the end
  current_ = std::move(ready_.front());
  ready_.pop_front();
  changed_.notify_all();
  *piece = current_;
  return Status::Ok();
}

Status PrefetchQueue::Drain() {
  std::string_view piece;
  do {
    RETURN_IF_ERROR(Next(&piece));
  } while (!piece.empty());
  return Status::Ok();
}

void PrefetchQueue::Stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopped_ = true;
  }
  changed_.notify_all();
}

std::optional<std::string> PrefetchQueue::TakeFree() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (free_.empty()) return std::nullopt;
  std::string buffer = std::move(free_.back());
  free_.pop_back();
  return buffer;
}

bool PrefetchQueue::Push(std::string piece) {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [this] { return ready_.size() < depth_ || stopped_; });
  if (stopped_) return false;
  if (!piece.empty()) ready_.push_back(std::move(piece));
  changed_.notify_all();
  return true;
}

void PrefetchQueue::End(const Status& status) {
  std::lock_guard<std::mutex> lock(mutex_);
  end_status_ = status;
  ended_ = true;
  changed_.notify_all();
}

}  // namespace clusterd
