#include "cli/content_hasher.h"

namespace clusterd {

ContentHasher::ContentHasher(size_t buffers, size_t buffer_bytes) {
  for (size_t i = 0; i < buffers; ++i) free_.emplace_back(buffer_bytes);
  thread_ = std::thread([this] { Run(); });
}

ContentHasher::~ContentHasher() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void ContentHasher::Add(TreeEntry* file, std::vector<char>* buffer, size_t size) {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [this] { return !free_.empty(); });
  std::vector<char> fresh = std::move(free_.back());
  free_.pop_back();
  tasks_.push_back(Task{file, std::move(*buffer), size});
  *buffer = std::move(fresh);
  lock.unlock();
  changed_.notify_all();
}

void ContentHasher::End(TreeEntry* file) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    tasks_.push_back(Task{file, {}, 0});
  }
  changed_.notify_all();
}

void ContentHasher::Wait() {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [this] { return tasks_.empty() && !busy_; });
}

void ContentHasher::Run() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    changed_.wait(lock, [this] { return stop_ || !tasks_.empty(); });
    if (stop_) return;
    Task task = std::move(tasks_.front());
    tasks_.pop_front();
    busy_ = true;
    lock.unlock();
    if (!current_) current_ = std::make_unique<Sha256>();
    if (task.buffer.empty()) {
      task.file->sha256 = current_->HexDigest();
      current_.reset();
    } else {
      current_->Update(task.buffer.data(), task.size);
    }
    lock.lock();
    busy_ = false;
    if (!task.buffer.empty()) free_.push_back(std::move(task.buffer));
    changed_.notify_all();
  }
}

}  // namespace clusterd
