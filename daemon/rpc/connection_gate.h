// The head's count of connections that have not yet proven the token, per
// listening port. Anyone who reaches a port can open connections that send
// nothing, or the first bytes of a protocol and then nothing; each holds a
// descriptor and the server's buffers until a timeout. Bounding them per
// source address and per port keeps the descriptors and memory they can
// take small, whatever the flood.
//
// The newest connection is always admitted and the oldest unproven one of
// the same source (or, past the port's bound, of any source) is closed in
// its stead: a real client proves the token in its first call, within
// milliseconds of connecting, so a flood that churns the slots wears out its
// own connections first, while one that was refused outright would lock
// every newcomer out, real clients included, for as long as it lasts.
// A connection that proved the token leaves the count: what a holder of the
// token may open is bounded by the descriptors the head keeps (see
// daemon/rpc/descriptor_reserve.h), not here.
//
// Pure bookkeeping: the caller closes what it is told to. Not thread-safe.
#pragma once

#include <cstdint>
#include <list>
#include <string>
#include <unordered_map>
#include <vector>

namespace clusterd {

// From the config table (HeadPortGuard, server_limits.h).
struct GateLimits {
  int per_source = 0;  // unproven connections from one address
  int per_port = 0;    // unproven connections on the port, from anywhere
};

// What one of the head's ports grants connections that have not proven
// the token; HeadPortGuard (server_limits.h) fills it from the config table.
struct PortGuard {
  GateLimits gate;
  // How long a connection may stay without proving the token (for TLS,
  // this bounds its handshake too).
  int unproven_timeout_ms = 0;
  // Descriptors held back for the moment the process runs out
  // (descriptor_reserve.h). Fixed: enough to drain a backlog a few at a
  // time, whatever the flood; nothing an operator tunes.
  int reserve_descriptors = 16;
};

class ConnectionGate {
 public:
  using Id = uint64_t;

  explicit ConnectionGate(GateLimits limits);

  // Counts a new connection from `source` (an address, without the port).
  // Appends to *evict the older unproven connections the caller must close
  // to stay within the limits; they have left the count already.
  Id Admit(const std::string& source, std::vector<Id>* evict);
  // It proved the token: no longer counted. Unknown ids are ignored.
  void Proven(Id id);
  // It closed (or was closed). Unknown ids are ignored.
  void Closed(Id id);

  int unproven() const { return static_cast<int>(order_.size()); }
  int unproven_from(const std::string& source) const;
  const GateLimits& limits() const { return limits_; }
  // Connections closed to admit newer ones, since the start.
  int64_t evicted() const { return evicted_; }

 private:
  struct Entry {
    std::string source;
    std::list<Id>::iterator in_order;         // in order_
    std::list<Id>::iterator in_source_order;  // in by_source_[source]
  };
  void Forget(Id id);
  void EvictOldest(const std::list<Id>& order, std::vector<Id>* evict);

  GateLimits limits_;
  Id next_id_ = 1;
  std::list<Id> order_;  // oldest first
  std::unordered_map<std::string, std::list<Id>> by_source_;
  std::unordered_map<Id, Entry> entries_;
  int64_t evicted_ = 0;
};

}  // namespace clusterd
