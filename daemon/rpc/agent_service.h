// gRPC face of the head for node agents: only where their stream goes.
// The stream itself is not a gRPC call (agent_wire_server.h): a gRPC
// stream cost the head ~35 KiB a node. An agent asks here first, so that a
// wrong token, a head that is not a clusterd head, or one not reachable at
// all gets the same answer a clusterctl call would.
#pragma once

#include <atomic>
#include <string>

#include "agent.grpc.pb.h"

namespace clusterd {

class AgentService final : public NodeAgentService::CallbackService {
 public:
  explicit AgentService(std::string token) : token_(std::move(token)) {}

  // The agent port, once it listens (before the gRPC server starts).
  void set_agent_port(int port) { agent_port_ = port; }

  grpc::ServerUnaryReactor* Locate(grpc::CallbackServerContext* context, const LocateRequest* request,
                                   AgentEndpoint* reply) override;

 private:
  std::string token_;
  std::atomic<int> agent_port_{0};
};

}  // namespace clusterd
