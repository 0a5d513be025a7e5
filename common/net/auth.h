// The cluster token on the wire: clients put it in the call's metadata,
// servers compare it in constant time.
#pragma once

#include <grpcpp/client_context.h>
#include <grpcpp/server_context.h>

#include <string>

#include "common/status.h"

namespace clusterd {

inline constexpr const char* kTokenMetadataKey = "x-cluster-token";

void AttachToken(grpc::ClientContext* context, const std::string& token);

// Whether `given` is the token `expected`, in time that depends on neither
// (OpenSSL's CRYPTO_memcmp over their SHA-256 digests), so the time a
// refusal takes tells nothing of how much of a guess was right.
bool TokensEqual(const std::string& given, const std::string& expected);

// A token a head may use: at least kMinTokenLength characters, each printable
// ASCII other than a space (gRPC metadata and HTTP headers carry nothing
// else). A short one can be guessed by anyone who reaches the port.
inline constexpr size_t kMinTokenLength = 16;
Status CheckTokenText(const std::string& token);

// OK, or UNAUTHENTICATED saying whether the token was missing or wrong.
// On OK it tells the hook, if one is set, which connection (gRPC's peer
// string) proved the token: the head's port counts those that have not
// (daemon/rpc/grpc_port_listener.h).
grpc::Status CheckToken(const grpc::CallbackServerContext& context, const std::string& expected);

using TokenProvedHook = void (*)(const std::string& peer);
void SetTokenProvedHook(TokenProvedHook hook);
// Tells the hook, if one is set, that the connection `peer` proved a token:
// for a check made elsewhere (the head resolves each token to a user).
void NoteTokenProved(const std::string& peer);

}  // namespace clusterd
