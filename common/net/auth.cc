#include "common/net/auth.h"

#include <atomic>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/sha.h>

#include <fmt/format.h>

namespace clusterd {

void AttachToken(grpc::ClientContext* context, const std::string& token) {
  context->AddMetadata(kTokenMetadataKey, token);
}

namespace {

// SHA-256, fetched once: OpenSSL 3's one-shot SHA256() looks the algorithm
// up for every call; a check (two digests) takes 1.4-1.7 us that way, 0.6 us
// this way, on every RPC.
void Sha256(const std::string& text, unsigned char* digest) {
  static EVP_MD* const sha256 = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  if (sha256 == nullptr ||
      EVP_Digest(text.data(), text.size(), digest, nullptr, sha256, nullptr) != 1) {
    SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest);
  }
}

}  // namespace

bool TokensEqual(const std::string& given, const std::string& expected) {
  // Digests compared in constant time: neither the bytes nor the length of
  // the expected token show in how long a wrong one takes.
  unsigned char a[SHA256_DIGEST_LENGTH], b[SHA256_DIGEST_LENGTH];
  Sha256(given, a);
  Sha256(expected, b);
  return CRYPTO_memcmp(a, b, sizeof a) == 0;
}

Status CheckTokenText(const std::string& token) {
  for (unsigned char c : token) {
    if (c <= 0x20 || c >= 0x7f) {
      return Status::InvalidArgument(fmt::format(
          "holds a byte a token cannot carry (0x{:02x}); use letters, digits and punctuation", c));
    }
  }
  if (token.size() < kMinTokenLength) {
    return Status::InvalidArgument(fmt::format(
        "holds a token of {} characters, which anyone who reaches the port could guess: use at least {} "
        "(or remove the file, and the head makes a random one)",
        token.size(), kMinTokenLength));
  }
  return Status::Ok();
}

namespace {
std::atomic<TokenProvedHook> token_proved_hook{nullptr};
}  // namespace

void SetTokenProvedHook(TokenProvedHook hook) { token_proved_hook.store(hook); }

void NoteTokenProved(const std::string& peer) {
  if (TokenProvedHook hook = token_proved_hook.load()) hook(peer);
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
  if (TokenProvedHook hook = token_proved_hook.load()) hook(context.peer());
  return grpc::Status::OK;
}

}  // namespace clusterd
