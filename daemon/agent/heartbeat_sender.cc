#include "daemon/agent/heartbeat_sender.h"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "common/net/heartbeat_datagram.h"
#include "common/net/net_address.h"
#include "common/session.h"

namespace clusterd {

Result<std::unique_ptr<HeartbeatSender>> HeartbeatSender::Open(const std::string& head_address,
                                                               const Registered& ack) {
  ASSIGN_OR_RETURN(HostPort head, ParseHostPort(head_address));
  HostPort destination{head.host, ack.heartbeat_udp_port()};
  ASSIGN_OR_RETURN(int fd, ConnectUdp(destination.host, destination.port));
  return std::unique_ptr<HeartbeatSender>(
      new HeartbeatSender(fd, ack.heartbeat_channel(), ack.heartbeat_key(), destination.ToString()));
}

HeartbeatSender::~HeartbeatSender() { close(fd_); }

void HeartbeatSender::Send(int64_t seq, const NodeUsage& usage, bool answer_me) {
  const std::string datagram = EncodeHeartbeat(channel_, key_, seq, usage, answer_me ? kAnswerMe : 0);
  if (datagram.empty()) return;
  // MSG_DONTWAIT: a full socket buffer drops this one rather than stall the
  // agent's heartbeat thread. ECONNREFUSED (ICMP from an earlier datagram)
  // and the like mean the same as a lost datagram.
  (void)send(fd_, datagram.data(), datagram.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
}

int64_t HeartbeatSender::TakeAnswer() {
  int64_t newest = 0;
  char buffer[kMaxHeartbeatDatagram];
  while (true) {
    ssize_t got = recv(fd_, buffer, sizeof buffer, MSG_DONTWAIT);
    if (got < 0 && errno == EINTR) continue;
    // Empty, or an error queued by ICMP (the head's port closed): either
    // way nothing more to read now.
    if (got < 0) return newest;
    int64_t seq = 0;
    if (DecodeHeartbeatAnswer(buffer, static_cast<size_t>(got), channel_, key_, &seq)) {
      newest = std::max(newest, seq);
    }
  }
}

}  // namespace clusterd
