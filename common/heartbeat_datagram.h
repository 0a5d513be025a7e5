// A node agent's heartbeat as one UDP datagram, signed with a key the head
// gave that agent's stream at registration (a NewToken(): 128 random
// bits). At 10,000 nodes the head hears 20,000 heartbeats a second;
// through gRPC each cost a stream read, a completion-queue search and a
// thread hand-off (docs/BENCHMARKS.md, control_plane), where a datagram
// costs a share of one recvmmsg.
//
// Layout: "CDH1", channel (8 bytes, big-endian), seq (8, big-endian), the
// NodeUsage protobuf, then HMAC-SHA256 under the key over all before it.
// A lost or reordered datagram is fine: the next one replaces it, and the
// head keeps only a seq newer than the last it took.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "cluster.pb.h"

namespace clusterd {

// Well under any path's MTU, so that a heartbeat is never fragmented.
constexpr size_t kMaxHeartbeatDatagram = 1200;

// The datagram for one heartbeat; empty when the usage does not fit.
std::string EncodeHeartbeat(uint64_t channel, const std::string& key, int64_t seq, const NodeUsage& usage);

// The channel a datagram names, read before its key is known; false when
// it is too short or short of the magic to be a heartbeat at all.
bool PeekHeartbeatChannel(const char* data, size_t size, uint64_t* channel);

// True, with seq and usage filled in, only when the datagram is signed
// with `key` and well formed; anything else (another key, a changed byte,
// a cut datagram) is false and fills in nothing.
bool DecodeHeartbeat(const char* data, size_t size, const std::string& key, int64_t* seq, NodeUsage* usage);

}  // namespace clusterd
