// One node agent's stream on the head's agent port (agent_wire_server.h),
// as the head's core sees it (AgentConnection). The agent's first frame
// must be its hello with a node token or an admin's (identity/access_rules.h),
// within the config table's
// unproven_connection_timeout_ms and under kMaxHelloBytes, before anything
// else of it is parsed or kept.
// Every message after that but a heartbeat is posted onto the head's event
// loop; heartbeats, from the stream or as datagrams (heartbeat_receiver.h),
// are recorded here for the head's tick to take.
#pragma once

#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "agent.pb.h"
#include "common/net/frame_channel.h"
#include "daemon/event_loop.h"
#include "daemon/head/head_core.h"
#include "daemon/rpc/connection_gate.h"
#include "daemon/rpc/heartbeat_receiver.h"

namespace clusterd {

// The largest frame before the hello: a stranger gets no 4 MiB buffer.
// Fixed: a hello holds only the token, far below it.
constexpr uint32_t kMaxHelloBytes = 4096;

// Logs that a stream from `peer` was refused before its hello was taken,
// at most 20 lines in 10 s (common/logs/log_limiter.h): strangers connect as
// fast as they like.
void LogRefusedStream(const std::string& peer, const std::string& why);

class WireConnection final : public AgentConnection,
                             public HeartbeatReceiver::Listener,
                             public std::enable_shared_from_this<WireConnection> {
 public:
  struct Context {
    HeadCore* core;
    EventLoop* loop;
    const UserRegistry* users;  // who a hello's token is
    std::atomic<HeartbeatReceiver*> datagrams{nullptr};  // set once the server runs
    // How long a new connection has to say hello (a peer that connects and
    // says nothing must not hold a connection for ever): the server's
    // PortGuard's unproven_timeout_ms.
    int hello_deadline_ms = 0;
    // Told, on the io thread, when a stream counted by the server's gate
    // proves the token in its hello, and when it ends.
    std::function<void(ConnectionGate::Id)> on_proven, on_ended;
  };
  // REQUIRES: context outlives the connection's handlers (the server's).
  // gate_id: the stream's place in the server's count of unproven ones.
  WireConnection(std::shared_ptr<FrameChannel> channel, Context* context, ConnectionGate::Id gate_id = 0);

  // Starts reading and the hello's deadline; on the io thread.
  void Start();

  // AgentConnection; on the loop.
  void Send(const HeadMessage& message) override;
  void Close(const Status& status) override;
  std::string Peer() const override { return peer_; }
  // Set once, by the hello, before the loop hears of the stream.
  std::string NodeTokenId() const override { return caller_.IsNode() ? caller_.user : ""; }
  std::optional<Heard> TakeHeartbeat() override;
  void OfferDatagramHeartbeats(Registered* ack) override;

  // HeartbeatReceiver::Listener.
  void OnHeartbeatDatagram(Micros at, NodeUsage* usage) override { RecordHeartbeat(at, usage); }
  void OnDatagramPath(bool heard) override;

 private:
  bool OnFrame(std::string body);         // io thread
  void SendOutbox();                      // loop: what Send held for this turn
  // Says why in one last frame, then closes; any thread (Close is the
  // loop's, after its outbox).
  void End(const Status& status);
  void OnClosed(const std::string& why);  // io thread
  // Refuses the stream before its hello: says why, then closes.
  bool Refuse(const Status& status);
  // Keeps the newest; an unread older one is simply replaced.
  void RecordHeartbeat(Micros at, NodeUsage* usage);

  std::weak_ptr<FrameChannel> channel_;  // the channel owns this through its handlers, not the other way
  std::shared_ptr<FrameChannel> starting_;  // until Start hands it its handlers
  Context* context_;
  std::string peer_;
  std::unique_ptr<boost::asio::steady_timer> hello_deadline_;  // until the hello
  // io thread only.
  bool past_hello_ = false;
  // Io thread: who the hello's token is, and the registry's revocations
  // when that was last checked: a revoked node token's stream ends at its
  // next frame (a heartbeat at the latest).
  Principal caller_;
  uint64_t revocations_seen_ = 0;
  bool past_register_ = false;  // the first message after the hello must register, which the loop checks
  std::atomic<bool> ended_by_head_{false};  // Close() was called

  std::string outbox_;  // loop only: frames Send holds until the turn's end

  std::mutex heard_mutex_;  // guards heard_ only, so a heartbeat never waits on the loop
  std::optional<Heard> heard_;
  std::mutex inbox_mutex_;  // guards inbox_ only
  std::deque<AgentMessage> inbox_;
  // Set on the loop at registration, read where the connection ends.
  std::atomic<HeartbeatReceiver*> offered_by_{nullptr};
  uint64_t channel_id_ = 0;  // written before offered_by_, read after it
  const ConnectionGate::Id gate_id_;
};

}  // namespace clusterd
