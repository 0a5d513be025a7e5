#include "daemon/rpc/call_principal.h"

#include <string>

#include "common/net/auth.h"

namespace clusterd {

grpc::Status ResolveCaller(const grpc::CallbackServerContext& context, const UserRegistry& users, Principal* caller) {
  const auto& metadata = context.client_metadata();
  auto it = metadata.find(kTokenMetadataKey);
  if (it == metadata.end()) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                        std::string(kMissingToken) + " (pass --token or set CLUSTER_TOKEN)");
  }
  auto resolved = users.Resolve(std::string_view(it->second.data(), it->second.size()));
  if (!resolved.ok()) {
    std::string message = resolved.status().message();
    if (message == kWrongToken) message += " (see the token file in the head's session folder)";
    if (message == kMissingToken) message += " (pass --token or set CLUSTER_TOKEN)";
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, message);
  }
  *caller = std::move(*resolved);
  NoteTokenProved(context.peer());
  return grpc::Status::OK;
}

}  // namespace clusterd
