// Whether the head still answers this agent. Every keepalive period
// without a word from the head, the agent asks for one: a heartbeat that
// asks for an answer (kAnswerMe on its datagram; answer_me on the stream,
// where datagrams are not heard or their answers do not come back). When
// an ask goes unanswered past the timeout, the agent drops its stream and
// reconnects, as a gRPC keepalive ping would have made it; 10,000 agents
// pinging every 2 s was half of the head's CPU. Before registration, and
// for a peer that vanished, TCP keepalive and a deadline are the backstop
// (kRegistrationTimeoutMs).
//
// Times are the caller's (Micros on a steady clock), so the rules are
// tested without waiting. Not thread-safe: HeadLink holds its lock.
#pragma once

#include <cstdint>

#include "common/clock.h"

namespace clusterd {

// How long an agent waits for its registration's answer: catches a head
// that hangs before a stream has registered, which HeadLiveness does not
// watch (a busy head answers late, not never).
constexpr int kRegistrationTimeoutMs = 30000;

class HeadLiveness {
 public:
  enum class Ask {
    kNo,
    kByDatagram,   // the first ask: on the datagram alone, where they are heard
    kOnStreamToo,  // asked before and not yet answered: on the stream as well
  };

  HeadLiveness(Micros keepalive, Micros timeout) : keepalive_(keepalive), timeout_(timeout) {}

  // Any word from the head: its registration reply (a new stream starts
  // here), or any later message on the stream.
  void Heard(Micros now);
  // An answer datagram for heartbeat `seq`: counts only for the last ask or
  // a later one, so that an old answer replayed says nothing.
  void Answered(int64_t seq, Micros now);
  // Called with every heartbeat about to go (`seq`): whether and how it asks.
  Ask ShouldAsk(int64_t seq, Micros now);
  // An ask has gone unanswered for longer than the timeout.
  bool GaveUp(Micros now) const { return asking_since_ >= 0 && now - asking_since_ > timeout_; }
  // How long since the head was last heard (for the log line).
  Micros silent_for(Micros now) const { return now - last_heard_; }

 private:
  const Micros keepalive_;
  const Micros timeout_;
  Micros last_heard_ = 0;
  Micros asking_since_ = -1;  // -1: no ask outstanding
  int64_t first_asked_seq_ = 0;  // of the outstanding ask, or of the last one
};

}  // namespace clusterd
