#include "common/auth.h"

namespace clusterd {

void AttachToken(grpc::ClientContext* context, const std::string& token) {
  context->AddMetadata(kTokenMetadataKey, token);
}

grpc::Status CheckToken(const grpc::CallbackServerContext& context, const std::string& expected) {
  const auto& metadata = context.client_metadata();
  auto it = metadata.find(kTokenMetadataKey);
  if (it == metadata.end()) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                        "missing cluster token (pass --token or set CLUSTER_TOKEN)");
  }
  const std::string given(it->second.data(), it->second.size());
  // Constant time in the token's length, so timing tells nothing of a prefix.
  unsigned char diff = given.size() == expected.size() ? 0 : 1;
  for (size_t i = 0; i < expected.size(); ++i) {
    diff |= static_cast<unsigned char>(expected[i] ^ (i < given.size() ? given[i] : 0));
  }
  if (diff != 0) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                        "wrong cluster token (see the token file in the head's session folder)");
  }
  return grpc::Status::OK;
}

}  // namespace clusterd
