#include "daemon/agent/head_wire_dialer.h"

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>

#include <chrono>

#include <fmt/format.h>

#include "agent.grpc.pb.h"
#include "common/net/auth.h"
#include "common/net/grpc_status.h"
#include "common/net/head_channel.h"
#include "common/net/leader_redirect.h"
#include "common/session.h"
#include "daemon/agent/head_wire.h"

namespace clusterd {

// A fresh gRPC channel for every attempt, with a subchannel of its own: a
// channel that saw the head refuse stays in TRANSIENT_FAILURE and fails new
// calls at once with the old error until its connect backoff lets it try
// again (head_channel.h). It carries one call, Locate, and goes with the
// stub after it: the head holds no gRPC connection per agent.
Result<int> HeadWireDialer::LocateAgentPort() {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  auto stub = NodeAgentService::NewStub(DialHeadAgain(options_.head_address, options_.tls,
                                                      options_.reconnect_initial_ms, options_.reconnect_max_ms,
                                                      options_.connect_timeout_ms, args));
  grpc::ClientContext context;
  AttachToken(&context, options_.token);
  // A connect's time and then the head's answer; gRPC's deadlines are on
  // the machine's wall clock.
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(2 * options_.connect_timeout_ms));
  {
    std::lock_guard<std::mutex> lock(mutex_);
    locate_context_ = &context;
    if (cancelled_) context.TryCancel();
  }
  LocateRequest request;
  AgentEndpoint reply;
  grpc::Status status = stub->Locate(&context, request, &reply);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    locate_context_ = nullptr;
    redirect_ = LeaderRedirectOf(status, context);
    standby_ = !status.ok() && context.GetServerTrailingMetadata().count(kLeaderMetadataKey) > 0;
  }
  if (status.ok()) return reply.port();
  if (status.error_code() == grpc::StatusCode::UNAVAILABLE ||
      status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
    return Status::Unavailable(UnreachableHead(options_.head_address, options_.tls, status.error_message()));
  }
  if (status.error_code() == grpc::StatusCode::UNIMPLEMENTED) {
    return Status::Unavailable(fmt::format("{} is not a clusterd head: {}", options_.head_address,
                                           status.error_message()));
  }
  return FromGrpc(status).WithContext(fmt::format("head {}", options_.head_address));
}

Result<std::unique_ptr<HeadConnection>> HeadWireDialer::Dial() {
  ASSIGN_OR_RETURN(int port, LocateAgentPort());
  ASSIGN_OR_RETURN(HostPort head, ParseHostPort(options_.head_address));
  auto wire = HeadWire::Open(head.host, port, options_.token, options_.tls, options_.connect_timeout_ms);
  if (!wire.ok()) {
    return Status::Unavailable(fmt::format(
        "the head at {} answers, but not on its agent port {}: {} (TCP port {} must be open from this machine "
        "to the head's: clusterd start --head --agent-port)", options_.head_address, port,
        wire.status().message(), port));
  }
  return std::unique_ptr<HeadConnection>(std::move(*wire));
}

std::string HeadWireDialer::redirect() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return redirect_;
}

bool HeadWireDialer::answered_as_standby() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return standby_;
}

void HeadWireDialer::Cancel() {
  std::lock_guard<std::mutex> lock(mutex_);
  cancelled_ = true;
  if (locate_context_) locate_context_->TryCancel();
}

}  // namespace clusterd
