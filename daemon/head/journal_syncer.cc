#include "daemon/head/journal_syncer.h"

#include <utility>

#include "common/threads.h"

namespace clusterd {

JournalSyncer::JournalSyncer(EventLoop* loop)
    : loop_(loop), thread_(StartNamedThread("journal-sync", [this] { Run(); })) {}

JournalSyncer::~JournalSyncer() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

JobJournal::Syncing JournalSyncer::Hooks() {
  JobJournal::Syncing hooks;
  hooks.defer = [loop = loop_](std::function<void()> fn) { loop->Post(std::move(fn)); };
  hooks.offload = [this](std::function<Status()> sync, std::function<void(Status)> done) {
    Offload(std::move(sync), std::move(done));
  };
  return hooks;
}

void JournalSyncer::Offload(std::function<Status()> sync, std::function<void(Status)> done) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    tasks_.push_back({std::move(sync), std::move(done)});
  }
  wake_.notify_one();
}

void JournalSyncer::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    wake_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
    if (stopping_) return;
    Task task = std::move(tasks_.front());
    tasks_.pop_front();
    lock.unlock();
    Status status = task.sync();
    loop_->Post([done = std::move(task.done), status] { done(status); });
    lock.lock();
  }
}

}  // namespace clusterd
