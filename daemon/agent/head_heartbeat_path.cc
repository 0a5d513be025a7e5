#include "daemon/agent/head_heartbeat_path.h"

#include "common/logging.h"

namespace clusterd {

HeadHeartbeatPath::HeadHeartbeatPath(std::string head_address, int keepalive_ms, int keepalive_timeout_ms)
    : head_address_(std::move(head_address)),
      keepalive_ms_(keepalive_ms),
      keepalive_timeout_ms_(keepalive_timeout_ms),
      liveness_(Micros{keepalive_ms} * 1000, Micros{keepalive_timeout_ms} * 1000) {}

std::shared_ptr<HeartbeatSender> HeadHeartbeatPath::OpenDatagrams(const std::string& head_address,
                                                                  const Registered& ack) {
  if (ack.heartbeat_udp_port() <= 0) return nullptr;
  auto opened = HeartbeatSender::Open(head_address, ack);
  if (!opened.ok()) {
    LOG_WARN("heartbeats stay on the stream: {}", opened.status().message());
    return nullptr;
  }
  std::shared_ptr<HeartbeatSender> sender = std::move(*opened);
  LOG_INFO("heartbeats go as datagrams to {}, and on the stream until the head hears them", sender->destination());
  return sender;
}

void HeadHeartbeatPath::StreamRegistered(Micros now) {
  liveness_.Heard(now);  // the registration reply
  head_stalled_ = false;
}

void HeadHeartbeatPath::UseDatagrams(std::shared_ptr<HeartbeatSender> datagrams) {
  datagrams_ = std::move(datagrams);
  datagrams_heard_ = false;
}

void HeadHeartbeatPath::StreamEnded() {
  datagrams_.reset();
  datagrams_heard_ = false;
}

bool HeadHeartbeatPath::OnPath(bool datagrams_heard) {
  if (!datagrams_) return false;
  bool beat_now = false;
  if (!datagrams_heard && datagrams_heard_) {
    LOG_WARN("the head no longer hears this node's heartbeat datagrams at {}: they go on the stream as well",
             datagrams_->destination());
    beat_now = true;
  } else if (datagrams_heard && !datagrams_heard_) {
    LOG_INFO("the head hears this node's heartbeat datagrams: they no longer go on the stream");
  }
  datagrams_heard_ = datagrams_heard;
  return beat_now;
}

bool HeadHeartbeatPath::StillThere(Micros now, int64_t answered, const MachineAckedFn& machine_acked_ms) {
  if (answered > 0) liveness_.Answered(answered, now);
  if (!liveness_.GaveUp(now)) {
    if (head_stalled_) {
      head_stalled_ = false;
      LOG_INFO("the head at {} answers again", head_address_);
    }
    return true;
  }
  const int64_t acked_ms = machine_acked_ms();
  const int64_t silent_ms = liveness_.silent_for(now) / 1000;
  if (acked_ms < 0 || acked_ms + kAckedSinceSilenceMs > silent_ms) {
    LOG_WARN("the head at {} has not answered for {} ms (keepalive_ms {} + keepalive_timeout_ms {}) and its "
             "machine does not acknowledge what this node sends: dropping the stream",
             head_address_, silent_ms, keepalive_ms_, keepalive_timeout_ms_);
    return false;
  }
  if (!head_stalled_) {
    head_stalled_ = true;
    LOG_WARN("the head at {} has not answered for {} ms, but its machine acknowledges what this node sends: "
             "keeping the stream (the head is stopped or starved; ranks here keep running)",
             head_address_, silent_ms);
  }
  return true;
}

}  // namespace clusterd
