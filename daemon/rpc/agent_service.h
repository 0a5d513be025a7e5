// gRPC face of the head for node agents: one bidirectional stream per agent
// (callback API, so thousands of streams need no thread each). Every event
// but a heartbeat is posted onto the head's event loop; heartbeats are
// recorded on the stream for the head's tick to take. HeadCore sees only
// AgentConnection.
#pragma once

#include <string>

#include "agent.grpc.pb.h"
#include "daemon/event_loop.h"
#include "daemon/head/head_core.h"

namespace clusterd {

class AgentService final : public NodeAgentService::CallbackService {
 public:
  // REQUIRES: core and loop outlive the server.
  AgentService(HeadCore* core, EventLoop* loop, std::string token)
      : core_(core), loop_(loop), token_(std::move(token)) {}

  grpc::ServerBidiReactor<AgentMessage, HeadMessage>* Connect(
      grpc::CallbackServerContext* context) override;

 private:
  HeadCore* core_;
  EventLoop* loop_;
  std::string token_;
};

}  // namespace clusterd
