#include "daemon/head/delivery_acks.h"

#include <algorithm>
#include <utility>

namespace clusterd {

DeliveryAcks::DeliveryAcks(WhenDurable when_durable, JournalWritable journal_writable)
    : when_durable_(std::move(when_durable)), journal_writable_(std::move(journal_writable)) {}

void DeliveryAcks::Taken(const std::shared_ptr<AgentConnection>& connection, int64_t delivery_seq) {
  auto [it, inserted] = streams_.try_emplace(connection.get());
  Stream& stream = it->second;
  if (inserted) stream.connection = connection;
  stream.seen = std::max(stream.seen, delivery_seq);
  if (stream.seen - stream.asked >= kEagerDeliveries) AcknowledgeWhenDurable(stream);
  if (!stream.due) {
    stream.due = true;
    due_.push_back(connection.get());
  }
}

void DeliveryAcks::AcknowledgeDue() {
  std::vector<AgentConnection*> due;
  due.swap(due_);
  for (AgentConnection* connection : due) {
    auto it = streams_.find(connection);
    if (it == streams_.end()) continue;
    Stream& stream = it->second;
    stream.due = false;
    if (stream.seen > stream.asked && !AcknowledgeWhenDurable(stream)) {
      stream.due = true;  // the next tick asks again
      due_.push_back(connection);
    }
  }
}

void DeliveryAcks::Forget(AgentConnection* connection) { streams_.erase(connection); }

bool DeliveryAcks::AcknowledgeWhenDurable(Stream& stream) {
  if (stream.waiting) return false;
  stream.waiting = true;
  std::weak_ptr<AgentConnection> connection = stream.connection;
  int64_t up_to = stream.asked = stream.seen;
  when_durable_([this, connection, up_to](Status status) { OnDurable(connection, up_to, status); });
  return true;
}

void DeliveryAcks::OnDurable(const std::weak_ptr<AgentConnection>& weak, int64_t up_to, const Status& status) {
  std::shared_ptr<AgentConnection> connection = weak.lock();
  if (!connection) return;
  auto it = streams_.find(connection.get());
  if (it == streams_.end() || it->second.connection != connection) return;
  it->second.waiting = false;
  // A journal that cannot be written keeps nothing: the agent keeps its
  // messages and sends them again when it next registers.
  if (status.ok() && journal_writable_()) {
    HeadMessage delivered;
    delivered.mutable_delivered()->set_up_to_seq(up_to);
    connection->Send(delivered);
  }
}

}  // namespace clusterd
