// What the head keeps of a token: its SHA-256, never the token. A presented
// token is hashed once and compared with every kept digest in constant
// time, so neither a digest's bytes nor which entry matched shows in how
// long a refusal takes.
#pragma once

#include <array>
#include <string>
#include <string_view>

namespace clusterd {

using TokenDigest = std::array<unsigned char, 32>;

TokenDigest DigestOfToken(std::string_view token);
// CRYPTO_memcmp: time independent of where the digests differ.
bool DigestsEqual(const TokenDigest& a, const TokenDigest& b);
// The digest as the journal keeps it (32 raw bytes), and back (all zeros,
// which no token hashes to, for bytes of the wrong length).
std::string DigestBytes(const TokenDigest& digest);
TokenDigest DigestFromBytes(const std::string& bytes);
// A new secret: 32 random bytes from OpenSSL's RAND_bytes as 64 hex
// digits, with `prefix` before them (it says what the token is for).
std::string NewSecretToken(std::string_view prefix);

}  // namespace clusterd
