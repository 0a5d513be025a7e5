#include "daemon/head/identity/token_digest.h"

#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include <algorithm>
#include <stdexcept>

namespace clusterd {

TokenDigest DigestOfToken(std::string_view token) {
  TokenDigest digest{};
  SHA256(reinterpret_cast<const unsigned char*>(token.data()), token.size(), digest.data());
  return digest;
}

bool DigestsEqual(const TokenDigest& a, const TokenDigest& b) {
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::string DigestBytes(const TokenDigest& digest) {
  return std::string(reinterpret_cast<const char*>(digest.data()), digest.size());
}

TokenDigest DigestFromBytes(const std::string& bytes) {
  TokenDigest digest{};
  if (bytes.size() == digest.size()) std::copy(bytes.begin(), bytes.end(), digest.begin());
  return digest;
}

std::string NewSecretToken(std::string_view prefix) {
  unsigned char bytes[32];
  // Without randomness there is no safe token to hand out; the caller's
  // request fails (an exception on the loop fails that call alone).
  if (RAND_bytes(bytes, sizeof bytes) != 1) throw std::runtime_error("OpenSSL's RAND_bytes failed");
  static constexpr char kHex[] = "0123456789abcdef";
  std::string token(prefix);
  for (unsigned char b : bytes) {
    token += kHex[b >> 4];
    token += kHex[b & 15];
  }
  return token;
}

}  // namespace clusterd
