#include "common/auth.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>

namespace clusterd {

void AttachToken(grpc::ClientContext* context, const std::string& token) {
  context->AddMetadata(kTokenMetadataKey, token);
}

bool TokensEqual(const std::string& given, const std::string& expected) {
  unsigned char a[SHA256_DIGEST_LENGTH], b[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(given.data()), given.size(), a);
  SHA256(reinterpret_cast<const unsigned char*>(expected.data()), expected.size(), b);
  return CRYPTO_memcmp(a, b, sizeof a) == 0;
}

grpc::Status CheckToken(const grpc::CallbackServerContext& context, const std::string& expected) {
  const auto& metadata = context.client_metadata();
  auto it = metadata.find(kTokenMetadataKey);
  if (it == metadata.end()) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                        "missing cluster token (pass --token or set CLUSTER_TOKEN)");
  }
  const std::string given(it->second.data(), it->second.size());
  if (!TokensEqual(given, expected)) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                        "wrong cluster token (see the token file in the head's session folder)");
  }
  return grpc::Status::OK;
}

}  // namespace clusterd
