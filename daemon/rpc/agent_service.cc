#include "daemon/rpc/agent_service.h"

#include "common/net/auth.h"
#include "common/logging.h"
#include "daemon/rpc/call_principal.h"
#include "daemon/rpc/rpc_latency.h"

namespace clusterd {

grpc::ServerUnaryReactor* AgentService::Locate(grpc::CallbackServerContext* context, const LocateRequest*,
                                               AgentEndpoint* reply) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  const RpcTimer timer(NodeAgentService::service_full_name(), "Locate");
  Principal caller;
  grpc::Status auth = ResolveCaller(*context, *users_, &caller);
  if (!auth.ok()) {
    LOG_WARN("refused a node agent from {}: {}", context->peer(), auth.error_message());
    timer.Finish(reactor, auth);
    return reactor;
  }
  const int port = agent_port_.load();
  if (port == 0) {
    timer.Finish(reactor, grpc::Status(grpc::StatusCode::UNAVAILABLE, "the head's agent port is not open yet"));
    return reactor;
  }
  reply->set_port(port);
  timer.Finish(reactor, grpc::Status::OK);
  return reactor;
}

}  // namespace clusterd
