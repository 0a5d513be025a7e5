// The head's UDP socket for node agents' heartbeat datagrams
// (common/net/heartbeat_datagram.h), on the port the agents' streams use, and
// the one thread that reads it. A stream is offered a channel and a key
// when its node registers; a datagram counts only when it names a live
// channel, is signed with that channel's key and carries a seq newer than
// any before on it. The receiver tells the stream when its datagrams are
// first heard and when they stop (a firewall, a route): the agent then
// sends its heartbeats on the stream again, before its node could time out.
// A heartbeat that asks (kAnswerMe) is answered with a datagram back to
// where it came from, one sendmmsg per batch read: the agent's sign that
// its head is alive.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

#include "cluster.pb.h"
#include "common/clock.h"
#include "common/status.h"

namespace clusterd {

class HeartbeatReceiver {
 public:
  // What a registered stream does with what the receiver hears. Called on
  // the receiver's thread, never under its locks.
  class Listener {
   public:
    virtual ~Listener() = default;
    virtual void OnHeartbeatDatagram(Micros at, NodeUsage* usage) = 0;
    // Datagrams are heard (true, after the first) or have stopped (false,
    // after none for two heartbeat periods).
    virtual void OnDatagramPath(bool heard) = 0;
  };
  struct Offer {
    uint64_t channel = 0;
    std::string key;
  };

  // Binds UDP on ip:port (0: any free port) and starts reading.
  static Result<std::unique_ptr<HeartbeatReceiver>> Start(const std::string& ip, int port, const Clock* clock,
                                                          int heartbeat_ms);
  HeartbeatReceiver(const HeartbeatReceiver&) = delete;
  HeartbeatReceiver& operator=(const HeartbeatReceiver&) = delete;
  ~HeartbeatReceiver();  // stops the thread and closes the socket

  int port() const { return port_; }
  // A new channel and key for one stream. Thread-safe.
  Offer Register(std::weak_ptr<Listener> listener);
  void Unregister(uint64_t channel);

  // Datagrams taken, and dropped (not ours, a wrong signature, an old seq).
  uint64_t accepted() const { return accepted_; }
  uint64_t rejected() const { return rejected_; }
  // Answers sent to heartbeats that asked for one.
  uint64_t answered() const { return answered_; }

 private:
  struct Channel {
    std::weak_ptr<Listener> listener;
    std::string key;
    int64_t last_seq = 0;
    Micros last_heard = 0;
    bool heard = false;  // the stream was told its datagrams are heard
  };

  HeartbeatReceiver(int fd, int wake_fd, int port, const Clock* clock, int heartbeat_ms);
  void Run();
  void Drain();
  void LookForSilence();

  const int fd_;
  const int wake_fd_;  // an eventfd: written once to stop the thread
  const int port_;
  const Clock* clock_;
  const Micros heartbeat_us_;
  std::mutex mutex_;  // guards the fields below
  std::unordered_map<uint64_t, Channel> channels_;
  uint64_t next_channel_ = 1;
  std::atomic<uint64_t> accepted_{0};
  std::atomic<uint64_t> rejected_{0};
  std::atomic<uint64_t> answered_{0};
  std::thread thread_;
};

}  // namespace clusterd
