// gRPC face of the head for node agents: one bidirectional stream per agent
// (callback API, so thousands of streams need no thread each). Every event
// but a heartbeat is posted onto the head's event loop; heartbeats, from
// the stream or as datagrams (heartbeat_receiver.h), are recorded on the
// stream's connection for the head's tick to take. HeadCore sees only
// AgentConnection.
#pragma once

#include <atomic>
#include <string>

#include "agent.grpc.pb.h"
#include "daemon/event_loop.h"
#include "daemon/head/head_core.h"
#include "daemon/rpc/heartbeat_receiver.h"

namespace clusterd {

class AgentService final : public NodeAgentService::CallbackService {
 public:
  // REQUIRES: core and loop outlive the server.
  AgentService(HeadCore* core, EventLoop* loop, std::string token)
      : core_(core), loop_(loop), token_(std::move(token)) {}

  // Where agents registering from now on may send heartbeat datagrams (it
  // binds the port the server was given, so it comes after the server
  // starts); until then, or with none, heartbeats come on the streams.
  // REQUIRES: datagrams outlives the server.
  void set_datagrams(HeartbeatReceiver* datagrams) { datagrams_ = datagrams; }

  grpc::ServerBidiReactor<AgentMessage, HeadMessage>* Connect(
      grpc::CallbackServerContext* context) override;

 private:
  HeadCore* core_;
  EventLoop* loop_;
  std::string token_;
  std::atomic<HeartbeatReceiver*> datagrams_{nullptr};
};

}  // namespace clusterd
