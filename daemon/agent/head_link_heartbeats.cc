// HeadLink, its heartbeats: every period on the stream, or as datagrams
// once the head hears them, and the asks that tell whether the head still
// answers (head_liveness.h).
#include "common/clock.h"
#include "common/logging.h"
#include "daemon/agent/head_link.h"

namespace clusterd {

void HeadLink::OpenDatagrams(const Registered& ack) {
  std::shared_ptr<HeartbeatSender> sender;
  if (ack.heartbeat_udp_port() > 0) {
    auto opened = HeartbeatSender::Open(options_.head_address, ack);
    if (opened.ok()) {
      sender = std::move(*opened);
      LOG_INFO("heartbeats go as datagrams to {}, and on the stream until the head hears them",
               sender->destination());
    } else {
      LOG_WARN("heartbeats stay on the stream: {}", opened.status().message());
    }
  }
  std::lock_guard<std::mutex> lock(mutex_);
  datagrams_ = std::move(sender);
  datagrams_heard_ = false;
}

void HeadLink::OnHeartbeatPath(bool datagrams_heard) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!datagrams_) return;
  if (!datagrams_heard && datagrams_heard_) {
    LOG_WARN("the head no longer hears this node's heartbeat datagrams at {}: they go on the stream as well",
             datagrams_->destination());
    beat_now_ = true;  // before the node could time out
    beat_wake_.notify_all();
  } else if (datagrams_heard && !datagrams_heard_) {
    LOG_INFO("the head hears this node's heartbeat datagrams: they no longer go on the stream");
  }
  datagrams_heard_ = datagrams_heard;
}

void HeadLink::HeartbeatLoop() {
  int64_t seq = 0;
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    clock_->WaitForMillis(beat_wake_, lock, options_.heartbeat_ms, [this] { return stopping_.load() || beat_now_; });
    if (stopping_) break;
    beat_now_ = false;
    if (!connected_ || stream_broken_) continue;
    std::shared_ptr<HeartbeatSender> datagrams = datagrams_;
    lock.unlock();
    const int64_t answered = datagrams ? datagrams->TakeAnswer() : 0;
    AgentMessage beat;
    beat.mutable_heartbeat()->set_seq(++seq);
    *beat.mutable_heartbeat()->mutable_usage() = usage_();  // reads /proc: not under the lock
    lock.lock();
    if (!connected_ || stream_broken_) continue;
    const Micros now = clock_->NowMicros();
    if (answered > 0) liveness_.Answered(answered, now);
    if (liveness_.GaveUp(now)) {
      // Found by exploratory testing: a head stopped for longer than the
      // timeout (SIGSTOP, a paused VM, swap) lost every agent's stream, each
      // counted as its node's death, and every running job failed. A new
      // stream reaches a stopped head no sooner, so the stream goes only
      // where the head's machine has acknowledged nothing since the head
      // went silent (gone, cut off): the asks sent on the stream meanwhile,
      // or the kernel's window probes once a stopped head's receive buffer
      // is full, are answered by a live machine. (Retransmissions alone
      // said nothing: a stopped head's full buffer causes them too, found
      // by the same testing with ranks that log.)
      const int64_t acked_ms = wire_ ? wire_->MillisSinceHeadMachineAcked() : -1;
      const int64_t silent_ms = liveness_.silent_for(now) / 1000;
      if (acked_ms < 0 || acked_ms + kAckedSinceSilenceMs > silent_ms) {
        LOG_WARN("the head at {} has not answered for {} ms (keepalive_ms {} + keepalive_timeout_ms {}) and its "
                 "machine does not acknowledge what this node sends: dropping the stream",
                 options_.head_address, liveness_.silent_for(now) / 1000, options_.keepalive_ms,
                 options_.keepalive_timeout_ms);
        stream_broken_ = true;
        if (wire_) wire_->Cancel();
        wake_.notify_all();
        continue;
      }
      if (!head_stalled_) {
        head_stalled_ = true;
        LOG_WARN("the head at {} has not answered for {} ms, but its machine acknowledges what this node sends: "
                 "keeping the stream (the head is stopped or starved; ranks here keep running)",
                 options_.head_address, liveness_.silent_for(now) / 1000);
      }
    } else if (head_stalled_) {
      head_stalled_ = false;
      LOG_INFO("the head at {} answers again", options_.head_address);
    }
    const HeadLiveness::Ask ask = liveness_.ShouldAsk(seq, now);
    const bool heard = datagrams && datagrams == datagrams_ && datagrams_heard_;
    lock.unlock();
    if (datagrams) datagrams->Send(seq, beat.heartbeat().usage(), ask != HeadLiveness::Ask::kNo);
    lock.lock();
    // Heard datagrams carry the beats; the stream only an ask that the
    // datagrams' answers have not settled (they may be dropped on the way back).
    if (heard && ask != HeadLiveness::Ask::kOnStreamToo) continue;
    if (!connected_) continue;
    if (ask != HeadLiveness::Ask::kNo) beat.mutable_heartbeat()->set_answer_me(true);
    // Ahead of queued logs, so a busy stream still beats; one at a time.
    if (outbox_.empty() || !outbox_.front().has_heartbeat()) {
      Enqueue(std::move(beat), true);
    } else if (ask != HeadLiveness::Ask::kNo) {
      outbox_.front().mutable_heartbeat()->set_answer_me(true);
    }
  }
}

}  // namespace clusterd
