#include "daemon/agent/head_liveness.h"

namespace clusterd {

void HeadLiveness::Heard(Micros now) {
  last_heard_ = now;
  asking_since_ = -1;
}

void HeadLiveness::Answered(int64_t seq, Micros now) {
  if (first_asked_seq_ > 0 && seq >= first_asked_seq_) Heard(now);
}

HeadLiveness::Ask HeadLiveness::ShouldAsk(int64_t seq, Micros now) {
  if (asking_since_ >= 0) return Ask::kOnStreamToo;
  if (now - last_heard_ < keepalive_) return Ask::kNo;
  asking_since_ = now;
  first_asked_seq_ = seq;
  return Ask::kByDatagram;
}

}  // namespace clusterd
