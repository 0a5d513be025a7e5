#include "daemon/agent/heartbeat_sender.h"

#include <sys/socket.h>
#include <unistd.h>

#include "common/heartbeat_datagram.h"
#include "common/net_address.h"
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

void HeartbeatSender::Send(int64_t seq, const NodeUsage& usage) {
  const std::string datagram = EncodeHeartbeat(channel_, key_, seq, usage);
  if (datagram.empty()) return;
  // MSG_DONTWAIT: a full socket buffer drops this one rather than stall the
  // agent's heartbeat thread. ECONNREFUSED (ICMP from an earlier datagram)
  // and the like mean the same as a lost datagram.
  (void)send(fd_, datagram.data(), datagram.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
}

}  // namespace clusterd
