#include "daemon/rpc/head_service.h"

#include "common/auth.h"
#include "common/grpc_status.h"

namespace clusterd {

template <typename Fn>
grpc::ServerUnaryReactor* HeadServiceImpl::OnLoop(grpc::CallbackServerContext* context, Fn fn) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  grpc::Status auth = CheckToken(*context, token_);
  if (!auth.ok()) {
    reactor->Finish(auth);
    return reactor;
  }
  loop_->Post([reactor, fn = std::move(fn)]() mutable { reactor->Finish(ToGrpc(fn())); });
  return reactor;
}

grpc::ServerUnaryReactor* HeadServiceImpl::GetStatus(grpc::CallbackServerContext* context,
                                                     const StatusRequest*, ClusterStatus* reply) {
  return OnLoop(context, [this, reply] {
    *reply = core_->GetStatus();
    return Status::Ok();
  });
}

grpc::ServerUnaryReactor* HeadServiceImpl::DrainNode(grpc::CallbackServerContext* context,
                                                     const NodeRequest* request, NodeReply* reply) {
  return OnLoop(context, [this, request, reply] {
    auto node = core_->DrainNode(request->node());
    if (node.ok()) *reply->mutable_node() = *node;
    return node.status();
  });
}

grpc::ServerUnaryReactor* HeadServiceImpl::StopNode(grpc::CallbackServerContext* context,
                                                    const NodeRequest* request, NodeReply* reply) {
  return OnLoop(context, [this, request, reply] {
    auto node = core_->StopNode(request->node());
    if (node.ok()) *reply->mutable_node() = *node;
    return node.status();
  });
}

}  // namespace clusterd
