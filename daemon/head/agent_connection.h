// The head's view of one node agent's stream, so that the head's core can
// talk to agents without knowing about gRPC. The rpc layer implements it;
// unit tests use a recording fake.
#pragma once

#include <optional>
#include <string>

#include "agent.pb.h"
#include "common/clock.h"
#include "common/status.h"

namespace clusterd {

class AgentConnection {
 public:
  virtual ~AgentConnection() = default;
  // Queues a message to the agent; on the head's loop (what one turn sends
  // a node may go out together after it). Never blocks; a message to a
  // closed connection is dropped.
  virtual void Send(const HeadMessage& message) = 0;
  // Ends the stream from the head's side, after what Send queued; the agent
  // sees `status`. On the head's loop.
  virtual void Close(const Status& status) = 0;
  // "ipv4:127.0.0.1:40312", for log lines.
  virtual std::string Peer() const = 0;
  // The id of the node token the agent said hello with ("nodetoken-0001");
  // "" for any other token (an admin's), whose nodes fetch any blob.
  virtual std::string NodeTokenId() const { return ""; }

  // A heartbeat the rpc layer recorded as it arrived, instead of posting
  // each one to the event loop (10,000 nodes send 20,000 a second). The
  // head takes the newest at each tick, before it looks for silent nodes.
  struct Heard {
    Micros at = 0;  // monotonic, when it arrived
    NodeUsage usage;
  };
  // The newest heartbeat since the last take, once; nullopt when none came.
  // Thread-safe.
  virtual std::optional<Heard> TakeHeartbeat() { return std::nullopt; }
  // Fills in the registration's answer with where and how the agent may
  // send its heartbeats as datagrams; leaves it alone where it may not.
  virtual void OfferDatagramHeartbeats(Registered* /*ack*/) {}
};

}  // namespace clusterd
