// JobJournal's syncing hooks driven by hand in unit tests: what the head's
// loop would run later, and what its syncer thread would run.
#pragma once

#include <deque>
#include <functional>
#include <utility>

#include "common/status.h"
#include "daemon/head/job_journal.h"

namespace clusterd::testing {

struct ManualSyncing {
  std::deque<std::function<void()>> deferred;
  std::deque<std::pair<std::function<Status()>, std::function<void(Status)>>> offloaded;

  JobJournal::Syncing Hooks() {
    JobJournal::Syncing hooks;
    hooks.defer = [this](std::function<void()> fn) { deferred.push_back(std::move(fn)); };
    hooks.offload = [this](std::function<Status()> sync, std::function<void(Status)> done) {
      offloaded.emplace_back(std::move(sync), std::move(done));
    };
    return hooks;
  }
  // The loop runs what was queued.
  void RunLoop() {
    while (!deferred.empty()) {
      auto fn = std::move(deferred.front());
      deferred.pop_front();
      fn();
    }
  }
  // The syncer finishes every sync handed to it, results back on the loop.
  void FinishSyncs() {
    while (!offloaded.empty()) {
      auto [sync, done] = std::move(offloaded.front());
      offloaded.pop_front();
      done(sync());
    }
  }
};

}  // namespace clusterd::testing
