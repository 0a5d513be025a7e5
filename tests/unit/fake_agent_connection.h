// A recording AgentConnection for driving HeadCore in unit tests.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "daemon/head/agent_connection.h"

namespace clusterd::testing {

class FakeAgentConnection : public AgentConnection {
 public:
  void Send(const HeadMessage& message) override { sent.push_back(message); }
  void Close(const Status& status) override {
    closed = true;
    close_status = status;
  }
  std::string Peer() const override { return peer; }
  std::optional<Heard> TakeHeartbeat() override {
    std::optional<Heard> taken;
    taken.swap(recorded);
    return taken;
  }

  // The up_to_seq of each Delivered the head sent, in order.
  std::vector<int64_t> DeliveredUpTo() const {
    std::vector<int64_t> out;
    for (const HeadMessage& m : sent) {
      if (m.has_delivered()) out.push_back(m.delivered().up_to_seq());
    }
    return out;
  }

  std::string peer = "fake";  // a gRPC peer string, e.g. "ipv4:10.0.0.2:5555"

  std::optional<Heard> recorded;  // what the rpc layer would have recorded off the loop
  std::vector<HeadMessage> sent;
  bool closed = false;
  Status close_status;
};

}  // namespace clusterd::testing
