// The head's journal syncs, off its event loop: one thread that runs each
// fdatasync the journal hands it (JobJournal::Syncing::offload) and posts
// the result back to the loop. While it syncs, the loop goes on serving
// calls and writing entries, which the next sync covers: group commit.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "common/status.h"
#include "daemon/event_loop.h"
#include "daemon/head/job_journal.h"

namespace clusterd {

class JournalSyncer {
 public:
  // REQUIRES: loop outlives this object.
  explicit JournalSyncer(EventLoop* loop);
  // Finishes the sync under way; queued ones are dropped (their calls are
  // never acknowledged, which is what a stopping head owes them).
  ~JournalSyncer();
  JournalSyncer(const JournalSyncer&) = delete;
  JournalSyncer& operator=(const JournalSyncer&) = delete;

  // Hooks for JobJournal::set_syncing: defer posts to the loop, offload
  // runs here.
  JobJournal::Syncing Hooks();

 private:
  struct Task {
    std::function<Status()> sync;
    std::function<void(Status)> done;
  };
  void Offload(std::function<Status()> sync, std::function<void(Status)> done);
  void Run();

  EventLoop* loop_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<Task> tasks_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace clusterd
