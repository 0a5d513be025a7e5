#include "common/heartbeat_datagram.h"

#include <cstring>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

namespace clusterd {

namespace {

constexpr char kMagic[4] = {'C', 'D', 'H', '1'};
constexpr size_t kHeaderBytes = sizeof kMagic + 8 + 8;
constexpr size_t kMacBytes = 32;

void PutBigEndian(uint64_t value, char* out) {
  for (int i = 7; i >= 0; --i, value >>= 8) out[i] = static_cast<char>(value & 0xff);
}

uint64_t GetBigEndian(const char* in) {
  uint64_t value = 0;
  for (int i = 0; i < 8; ++i) value = (value << 8) | static_cast<unsigned char>(in[i]);
  return value;
}

bool Mac(const std::string& key, const char* data, size_t size, unsigned char out[kMacBytes]) {
  unsigned int length = 0;
  return HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(data),
              size, out, &length) != nullptr &&
         length == kMacBytes;
}

}  // namespace

std::string EncodeHeartbeat(uint64_t channel, const std::string& key, int64_t seq, const NodeUsage& usage) {
  std::string datagram(kHeaderBytes, '\0');
  std::memcpy(datagram.data(), kMagic, sizeof kMagic);
  PutBigEndian(channel, datagram.data() + sizeof kMagic);
  PutBigEndian(static_cast<uint64_t>(seq), datagram.data() + sizeof kMagic + 8);
  if (!usage.AppendToString(&datagram)) return "";
  unsigned char mac[kMacBytes];
  if (!Mac(key, datagram.data(), datagram.size(), mac)) return "";
  datagram.append(reinterpret_cast<const char*>(mac), kMacBytes);
  if (datagram.size() > kMaxHeartbeatDatagram) return "";
  return datagram;
}

bool PeekHeartbeatChannel(const char* data, size_t size, uint64_t* channel) {
  if (size < kHeaderBytes + kMacBytes || size > kMaxHeartbeatDatagram) return false;
  if (std::memcmp(data, kMagic, sizeof kMagic) != 0) return false;
  *channel = GetBigEndian(data + sizeof kMagic);
  return true;
}

bool DecodeHeartbeat(const char* data, size_t size, const std::string& key, int64_t* seq, NodeUsage* usage) {
  uint64_t channel = 0;
  if (!PeekHeartbeatChannel(data, size, &channel)) return false;
  const size_t signed_bytes = size - kMacBytes;
  unsigned char mac[kMacBytes];
  if (!Mac(key, data, signed_bytes, mac)) return false;
  // Constant time: a forger learns nothing from how long a wrong MAC took.
  if (CRYPTO_memcmp(mac, data + signed_bytes, kMacBytes) != 0) return false;
  NodeUsage parsed;
  if (!parsed.ParseFromArray(data + kHeaderBytes, static_cast<int>(signed_bytes - kHeaderBytes))) return false;
  *seq = static_cast<int64_t>(GetBigEndian(data + sizeof kMagic + 8));
  usage->Swap(&parsed);
  return true;
}

}  // namespace clusterd
