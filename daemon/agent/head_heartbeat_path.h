// Where one stream's heartbeats go, and whether the head still answers
// them. They go as UDP datagrams where the head's registration offers them,
// and on the stream as well until the head says it hears the datagrams, or
// again at once when it says it no longer does (before the node could time
// out). An ask the head leaves unanswered past keepalive_ms +
// keepalive_timeout_ms (HeadLiveness) drops the stream only where the
// head's machine has acknowledged nothing since the head went silent (the
// head is gone or cut off): a head that is stopped or starved (SIGSTOP, a
// paused VM, swap) keeps its streams, so its nodes are not counted dead
// and their jobs keep running. A new stream would reach a stopped head no
// sooner. Retransmissions alone say nothing: a stopped head's full receive
// buffer causes them too; its machine still acknowledges the asks, or the
// kernel's window probes once that buffer is full.
// Not thread-safe: HeadLink holds its lock around every call.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "agent.pb.h"
#include "common/clock.h"
#include "daemon/agent/head_liveness.h"
#include "daemon/agent/heartbeat_sender.h"

namespace clusterd {

class HeadHeartbeatPath {
 public:
  // How long ago the head's machine last acknowledged what the node sent,
  // in ms; negative when that is not known.
  using MachineAckedFn = std::function<int64_t()>;

  HeadHeartbeatPath(std::string head_address, int keepalive_ms, int keepalive_timeout_ms);

  // The datagrams a registration offers; null where it offers none or they
  // cannot be opened (the stream carries the beats). Opens a socket: call
  // it without HeadLink's lock.
  static std::shared_ptr<HeartbeatSender> OpenDatagrams(const std::string& head_address, const Registered& ack);

  // A stream registered at `now`: the head answers, no datagrams yet.
  void StreamRegistered(Micros now);
  // This stream's datagrams (or none), not yet heard by the head.
  void UseDatagrams(std::shared_ptr<HeartbeatSender> datagrams);
  // The stream ended: its datagrams stop counting.
  void StreamEnded();
  // Any word from the head on the stream.
  void Heard(Micros now) { liveness_.Heard(now); }
  // The head's HeartbeatPath: whether it hears the datagrams. Returns true
  // when it stopped hearing them: the stream must beat at once.
  bool OnPath(bool datagrams_heard);

  std::shared_ptr<HeartbeatSender> datagrams() const { return datagrams_; }
  // Whether `datagrams` are this stream's and the head hears them: then
  // they carry the beats, and the stream only an ask they did not settle.
  bool CarriedBy(const std::shared_ptr<HeartbeatSender>& datagrams) const {
    return datagrams && datagrams == datagrams_ && datagrams_heard_;
  }

  // Judges the head before a beat at `now`: `answered` is the newest seq
  // its datagram answers took (0: none). False when the stream must be
  // dropped; a head that only stalls is warned about once and kept.
  bool StillThere(Micros now, int64_t answered, const MachineAckedFn& machine_acked_ms);
  // Whether and how the beat numbered `seq` asks for an answer.
  HeadLiveness::Ask ShouldAsk(int64_t seq, Micros now) { return liveness_.ShouldAsk(seq, now); }

 private:
  // The head's machine counts as acknowledging where it did so at least
  // this long after the head itself went silent.
  static constexpr int64_t kAckedSinceSilenceMs = 1000;

  const std::string head_address_;  // for log lines
  const int keepalive_ms_;
  const int keepalive_timeout_ms_;
  std::shared_ptr<HeartbeatSender> datagrams_;  // this stream's, when the head offered them
  bool datagrams_heard_ = false;                // the head hears them: the stream carries none
  HeadLiveness liveness_;                       // this stream's: does the head still answer
  bool head_stalled_ = false;                   // silent past the timeout, its machine acknowledging (warned)
};

}  // namespace clusterd
