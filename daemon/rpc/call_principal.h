// Who made a gRPC call: the token in its metadata (x-cluster-token)
// resolved by the head's users (identity/user_registry.h). Every service of
// the head starts here; the handlers then apply the access rules
// (identity/access_rules.h) to the principal.
#pragma once

#include <grpcpp/server_context.h>

#include "daemon/head/identity/principal.h"
#include "daemon/head/identity/user_registry.h"

namespace clusterd {

// OK with *caller set, or UNAUTHENTICATED saying whether the token was
// missing, wrong or revoked. On OK the connection counts as proven
// (grpc_port_listener.h): any valid principal proves it.
grpc::Status ResolveCaller(const grpc::CallbackServerContext& context, const UserRegistry& users, Principal* caller);

}  // namespace clusterd
