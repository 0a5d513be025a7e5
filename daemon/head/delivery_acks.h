// Tells each agent when it may forget the messages it keeps until the head
// has them durably (AgentMessage.delivery_seq: exits, checkpoints, results).
// An agent resends what it kept when it registers again, so the head answers
// (HeadMessage.delivered) only once the journal has synced what those
// messages changed, and never while the journal cannot be written.
//
// The answers are asked for at each tick (or at once after kEagerDeliveries
// kept messages on one stream), so they cost a stream one message per
// heartbeat period, not one per exit: nothing waits on them but the agent's
// memory. Plain class on the head's event loop; NOT thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "common/status.h"
#include "daemon/head/agent_connection.h"

namespace clusterd {

class DeliveryAcks {
 public:
  // Kept messages taken from one stream beyond which it is answered at
  // once rather than at the next tick (the agent keeps at most 4096).
  static constexpr int64_t kEagerDeliveries = 1024;

  // Runs `done` once what the journal holds now is synced, with how that went.
  using WhenDurable = std::function<void(std::function<void(Status)> done)>;
  // Whether the journal takes writes now.
  using JournalWritable = std::function<bool()>;

  DeliveryAcks(WhenDurable when_durable, JournalWritable journal_writable);

  // The head took the kept message numbered `delivery_seq` from `connection`.
  void Taken(const std::shared_ptr<AgentConnection>& connection, int64_t delivery_seq);
  // Asks for the answers every stream with unanswered messages is due.
  void AcknowledgeDue();
  // The stream is gone (ended, broken or replaced): nothing more is told
  // on it, not even what its journal sync answers later.
  void Forget(AgentConnection* connection);

 private:
  struct Stream {
    std::shared_ptr<AgentConnection> connection;
    int64_t seen = 0;             // the newest kept message taken
    int64_t asked = 0;            // the newest one an answer was asked for
    bool waiting = false;         // that answer waits for the journal's sync
    bool due = false;             // listed in due_
  };

  // Asks the journal to say when what `stream` changed is synced. False
  // when the answer before is still waiting for its sync.
  bool AcknowledgeWhenDurable(Stream& stream);
  void OnDurable(const std::weak_ptr<AgentConnection>& connection, int64_t up_to, const Status& status);

  WhenDurable when_durable_;
  JournalWritable journal_writable_;
  std::map<AgentConnection*, Stream> streams_;
  // Streams with kept messages not yet answered, so that a tick looks at
  // those only, not at every node's. An entry may outlive its stream.
  std::vector<AgentConnection*> due_;
};

}  // namespace clusterd
