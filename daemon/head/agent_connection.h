// The head's view of one node agent's stream, so that the head's core can
// talk to agents without knowing about gRPC. The rpc layer implements it;
// unit tests use a recording fake.
#pragma once

#include <string>

#include "agent.pb.h"
#include "common/status.h"

namespace clusterd {

class AgentConnection {
 public:
  virtual ~AgentConnection() = default;
  // Queues a message to the agent. Thread-safe; never blocks; a message to
  // a closed connection is dropped.
  virtual void Send(const HeadMessage& message) = 0;
  // Ends the stream from the head's side; the agent sees `status`.
  virtual void Close(const Status& status) = 0;
  // "ipv4:127.0.0.1:40312", for log lines.
  virtual std::string Peer() const = 0;
};

}  // namespace clusterd
