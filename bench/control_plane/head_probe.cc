#include "head_probe.h"

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>

#include "common/net/auth.h"
#include "common/session.h"

namespace clusterd::bench {

HeadProbe::HeadProbe(const std::string& address, const std::string& token, const TlsConfig& tls)
    : token_(token), stub_(HeadService::NewStub(DialHead(address, tls))) {}

bool HeadProbe::GetStatus(ClusterStatus* status, std::string* error, std::chrono::milliseconds deadline,
                          int nodes_per_state) {
  grpc::ClientContext context;
  AttachToken(&context, token_);
  context.set_deadline(std::chrono::system_clock::now() + deadline);
  StatusRequest request;
  request.set_nodes_per_state(nodes_per_state);
  grpc::Status result = stub_->GetStatus(&context, request, status);
  if (!result.ok() && error) *error = result.error_message();
  return result.ok();
}

std::optional<std::string> SessionToken(const std::string& temp_dir) {
  auto session = LatestSession(temp_dir);
  if (!session.ok()) return std::nullopt;
  auto token = ReadFileTrimmed(session->TokenFile());
  if (!token.ok() || token->empty()) return std::nullopt;
  return *token;
}

NodeState StateOf(const ClusterStatus& status, const std::string& name) {
  for (const NodeInfo& node : status.nodes()) {
    if (node.name() == name) return node.state();
  }
  return NODE_STATE_UNSPECIFIED;
}

int CountInState(const ClusterStatus& status, NodeState state) {
  int count = 0;
  for (const NodeInfo& node : status.nodes()) count += node.state() == state;
  return count;
}

}  // namespace clusterd::bench
