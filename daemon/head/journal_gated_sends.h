// What a head in HA sends its agents (launches, kills, port reservations,
// watches) leaves only once the journal holds the change that caused it.
// A leader that etcd has deposed finds out at its next fenced write; a
// message sent before that write landed would act on the cluster (a rank
// killed, a gang launched) for a head that no longer leads, beside the
// head that does. Held until the write lands, the message goes only if it
// landed, so a deposed leader acts on nothing (its head is torn down with
// what it held).
//
// While the journal fails (etcd away), messages wait, in order, until it
// is writable again: its healing snapshot holds every change made
// meanwhile, so they are then sent. A single head does not gate: its
// journal is its own disk, and a restarted single head adopts or kills
// whatever its nodes report.
//
// NOT thread-safe: the head's event loop has it.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <string>
#include <utility>

#include "agent.pb.h"
#include "common/status.h"

namespace clusterd {

class JournalGatedSends {
 public:
  // Runs done once everything journaled so far is durable (JobJournal::WhenDurable).
  using WhenDurable = std::function<void(std::function<void(Status)> done)>;
  using SendFn = std::function<bool(const std::string& node_id, const HeadMessage& message)>;

  // `journal_ok`: the journal is writable (not failing); `reachable`: the
  // node has a live stream now; `send`: sends at once.
  JournalGatedSends(WhenDurable when_durable, std::function<bool()> journal_ok,
                    std::function<bool(const std::string& node_id)> reachable, SendFn send);

  // Queues `message` for `node_id` behind the journal's next sync. Returns
  // whether the node is reachable now (what a direct send would have said
  // of the stream; a stream that ends meanwhile loses the message, as it
  // would have lost it in flight).
  bool Send(const std::string& node_id, const HeadMessage& message);
  // Sends what a failed sync held, once the journal is writable again;
  // call after the journal's own retry (JobManager::Tick).
  void Release();

  // Messages waiting for a sync, and those held by a failing journal.
  size_t waiting() const { return waiting_; }
  size_t held() const { return held_.size(); }

 private:
  struct Pending {
    std::string node_id;
    HeadMessage message;
  };
  // Sends `batch` once the journal holds everything written so far; holds
  // it (in front of anything held since) when that fails.
  void SendWhenDurable(std::deque<Pending> batch);

  WhenDurable when_durable_;
  std::function<bool()> journal_ok_;
  std::function<bool(const std::string&)> reachable_;
  SendFn send_;
  size_t waiting_ = 0;
  std::deque<Pending> held_;
};

}  // namespace clusterd
