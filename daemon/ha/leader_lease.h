// How long a leader may go on acting as one, measured on its own clock from
// what etcd has acknowledged. etcd expires a lease no sooner than its TTL
// after it received the last keepalive (or the grant), which is after the
// leader sent it; so counted from the send, on the leader's own monotonic
// clock, the lease is certainly alive until send + TTL. The leader stops a
// margin before that, which covers the two clocks running at slightly
// different rates and the time it takes to notice. No sockets here: unit
// tests drive it with a FakeClock's times.
#pragma once

#include <cstdint>

#include "common/clock.h"

namespace clusterd {

class LeaderLease {
 public:
  explicit LeaderLease(int64_t step_down_margin_ms) : margin_(step_down_margin_ms * 1000) {}

  // etcd acknowledged a grant or keepalive sent at `sent_at` with `ttl_s`.
  // An older acknowledgement than one already held changes nothing.
  void Acknowledged(Micros sent_at, int64_t ttl_s);
  // The lease is given up (resigned, revoked, found gone).
  void Clear() { held_ = false; }

  bool held() const { return held_; }
  // Whether the leader may still act at `now`: held, and before ActUntil().
  bool MayAct(Micros now) const { return held_ && now < ActUntil(); }
  // The end of acting: last acknowledged send + TTL - margin.
  Micros ActUntil() const { return last_sent_ + ttl_ - margin_; }
  // When the last acknowledged grant or keepalive was sent.
  Micros last_acknowledged_send() const { return last_sent_; }

 private:
  const Micros margin_;
  bool held_ = false;
  Micros last_sent_ = 0;
  Micros ttl_ = 0;
};

}  // namespace clusterd
