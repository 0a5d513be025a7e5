#include "daemon/head/journal_gated_sends.h"

#include <iterator>

#include "common/logging.h"

namespace clusterd {

JournalGatedSends::JournalGatedSends(WhenDurable when_durable, std::function<bool()> journal_ok,
                                     std::function<bool(const std::string& node_id)> reachable, SendFn send)
    : when_durable_(std::move(when_durable)),
      journal_ok_(std::move(journal_ok)),
      reachable_(std::move(reachable)),
      send_(std::move(send)) {}

bool JournalGatedSends::Send(const std::string& node_id, const HeadMessage& message) {
  const bool reachable = reachable_(node_id);
  if (!held_.empty() || !journal_ok_()) {
    // Behind what is held already: messages to a node keep their order.
    held_.push_back({node_id, message});
    return reachable;
  }
  std::deque<Pending> one;
  one.push_back({node_id, message});
  SendWhenDurable(std::move(one));
  return reachable;
}

void JournalGatedSends::Release() {
  if (held_.empty() || !journal_ok_()) return;
  LOG_INFO("journal writable again: sending the {} message{} to nodes it held", held_.size(),
           held_.size() == 1 ? "" : "s");
  std::deque<Pending> batch;
  batch.swap(held_);
  SendWhenDurable(std::move(batch));
}

void JournalGatedSends::SendWhenDurable(std::deque<Pending> batch) {
  waiting_ += batch.size();
  // WhenDurable may run done at once (nothing waits to be synced).
  when_durable_([this, batch = std::move(batch)](Status status) mutable {
    waiting_ -= batch.size();
    if (!status.ok() || !held_.empty()) {
      // The sync failed (etcd away, or this head deposed), or something
      // is held already: wait for the journal to heal. A failed sync
      // releases every waiting batch at once, oldest first, so appending
      // keeps the order in which the messages were sent.
      held_.insert(held_.end(), std::make_move_iterator(batch.begin()), std::make_move_iterator(batch.end()));
      return;
    }
    for (const Pending& pending : batch) send_(pending.node_id, pending.message);
  });
}

}  // namespace clusterd
