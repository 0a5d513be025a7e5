// The cluster token on the wire: clients put it in the call's metadata,
// servers compare it in constant time.
#pragma once

#include <grpcpp/client_context.h>
#include <grpcpp/server_context.h>

#include <string>

namespace clusterd {

inline constexpr const char* kTokenMetadataKey = "x-cluster-token";

void AttachToken(grpc::ClientContext* context, const std::string& token);

// Whether `given` is the token `expected`, in time that depends on neither
// (OpenSSL's CRYPTO_memcmp over their SHA-256 digests), so the time a
// refusal takes tells nothing of how much of a guess was right.
bool TokensEqual(const std::string& given, const std::string& expected);

// OK, or UNAUTHENTICATED saying whether the token was missing or wrong.
grpc::Status CheckToken(const grpc::CallbackServerContext& context, const std::string& expected);

}  // namespace clusterd
