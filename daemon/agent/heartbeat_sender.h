// The agent's side of heartbeat datagrams (common/net/heartbeat_datagram.h): a
// UDP socket toward the head, with the channel and key that one stream's
// registration was given. One per registration: a new stream gets a new
// channel and key, and the old datagrams stop counting. The head's answers
// come back on the same socket (connected: only the head's are taken).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "agent.pb.h"
#include "common/status.h"

namespace clusterd {

class HeartbeatSender {
 public:
  // head_address: "host:port", as the agent reached the head; the
  // datagrams go to that host at the port the registration names.
  // REQUIRES: ack.heartbeat_udp_port() > 0.
  static Result<std::unique_ptr<HeartbeatSender>> Open(const std::string& head_address, const Registered& ack);
  HeartbeatSender(const HeartbeatSender&) = delete;
  HeartbeatSender& operator=(const HeartbeatSender&) = delete;
  ~HeartbeatSender();

  // Best effort, as UDP is: a datagram that cannot go now (no route, the
  // head's port refused) is dropped, and the head, hearing none, tells the
  // agent to use its stream.
  // answer_me: the head answers this one (TakeAnswer).
  void Send(int64_t seq, const NodeUsage& usage, bool answer_me);
  // The newest heartbeat seq the head has answered since the last call,
  // reading what has arrived without waiting; 0: none.
  int64_t TakeAnswer();
  const std::string& destination() const { return destination_; }

 private:
  HeartbeatSender(int fd, uint64_t channel, std::string key, std::string destination)
      : fd_(fd), channel_(channel), key_(std::move(key)), destination_(std::move(destination)) {}

  const int fd_;
  const uint64_t channel_;
  const std::string key_;
  const std::string destination_;  // "host:port", for log lines
};

}  // namespace clusterd
