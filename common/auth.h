// The cluster token on the wire: clients put it in the call's metadata,
// servers compare it in constant time.
#pragma once

#include <grpcpp/client_context.h>
#include <grpcpp/server_context.h>

#include <string>

namespace clusterd {

inline constexpr const char* kTokenMetadataKey = "x-cluster-token";

void AttachToken(grpc::ClientContext* context, const std::string& token);

// OK, or UNAUTHENTICATED saying whether the token was missing or wrong.
grpc::Status CheckToken(const grpc::CallbackServerContext& context, const std::string& expected);

}  // namespace clusterd
