// A node agent's heartbeat as one UDP datagram, signed with a key the head
// gave that agent's stream at registration (a NewToken(): 128 random
// bits). At 10,000 nodes the head hears 20,000 heartbeats a second;
// through gRPC each cost a stream read, a completion-queue search and a
// thread hand-off (docs/BENCHMARKS.md, control_plane), where a datagram
// costs a share of one recvmmsg.
//
// Layout: "CDH1", channel (8 bytes, big-endian), seq (8, big-endian),
// flags (1 byte), the NodeUsage protobuf, then HMAC-SHA256 under the key
// over all before it. A lost or reordered datagram is fine: the next one
// replaces it, and the head keeps only a seq newer than the last it took.
//
// The head answers a heartbeat that asks for it (kAnswerMe) with one
// datagram back: "CDA1", channel, seq, HMAC-SHA256 over those. That is how
// an agent whose datagrams are heard knows its head is alive without a
// gRPC keepalive ping on its connection, which at 10,000 nodes costs about
// half of the head's CPU (docs/BENCHMARKS.md, control_plane).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "cluster.pb.h"

namespace clusterd {

// Well under any path's MTU, so that a heartbeat is never fragmented.
constexpr size_t kMaxHeartbeatDatagram = 1200;

// Heartbeat flags.
constexpr uint8_t kAnswerMe = 1;  // the head answers this one (EncodeHeartbeatAnswer)

// The datagram for one heartbeat; empty when the usage does not fit.
std::string EncodeHeartbeat(uint64_t channel, const std::string& key, int64_t seq, const NodeUsage& usage,
                            uint8_t flags = 0);

// The channel a datagram names, read before its key is known; false when
// it is too short or short of the magic to be a heartbeat at all.
bool PeekHeartbeatChannel(const char* data, size_t size, uint64_t* channel);

// True, with seq and usage filled in, only when the datagram is signed
// with `key` and well formed; anything else (another key, a changed byte,
// a cut datagram) is false and fills in nothing.
// flags, when not null, gets the heartbeat's flags.
bool DecodeHeartbeat(const char* data, size_t size, const std::string& key, int64_t* seq, NodeUsage* usage,
                     uint8_t* flags = nullptr);

// The head's answer to heartbeat `seq` of a channel.
std::string EncodeHeartbeatAnswer(uint64_t channel, const std::string& key, int64_t seq);
// True, with seq filled in, only for an answer on `channel` signed with `key`.
bool DecodeHeartbeatAnswer(const char* data, size_t size, uint64_t channel, const std::string& key, int64_t* seq);

}  // namespace clusterd
