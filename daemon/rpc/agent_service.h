// gRPC face of the head for node agents: only where their stream goes.
// The stream itself is not a gRPC call (agent_wire_server.h): a gRPC
// stream cost the head ~35 KiB a node. An agent asks here first, so that a
// wrong token, a head that is not a clusterd head, or one not reachable at
// all gets the same answer a clusterctl call would.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "agent.grpc.pb.h"
#include "daemon/head/identity/user_registry.h"

namespace clusterd {

class AgentService final : public NodeAgentService::CallbackService {
 public:
  // Tokens resolved by `users`, which outlives the service: any user's or
  // node token may ask (the agent port's hello says who may register).
  explicit AgentService(const UserRegistry* users) : users_(users) {}
  // Only the admin's `token` (tests, tools).
  explicit AgentService(const std::string& token)
      : own_users_(UserRegistry::AdminOnly(token)), users_(own_users_.get()) {}

  // The agent port, once it listens (before the gRPC server starts).
  void set_agent_port(int port) { agent_port_ = port; }

  grpc::ServerUnaryReactor* Locate(grpc::CallbackServerContext* context, const LocateRequest* request,
                                   AgentEndpoint* reply) override;

 private:
  std::unique_ptr<UserRegistry> own_users_;
  const UserRegistry* users_;
  std::atomic<int> agent_port_{0};
};

}  // namespace clusterd
