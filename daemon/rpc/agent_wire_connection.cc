#include "daemon/rpc/agent_wire_connection.h"

#include <fmt/format.h>

#include "common/net/auth.h"
#include "common/clock.h"
#include "common/net/grpc_status.h"
#include "common/logs/log_limiter.h"
#include "common/logging.h"
#include "daemon/head/identity/access_rules.h"

namespace clusterd {

WireConnection::WireConnection(std::shared_ptr<FrameChannel> channel, Context* context, ConnectionGate::Id gate_id)
    : channel_(channel), starting_(std::move(channel)), context_(context), peer_(starting_->peer()), gate_id_(gate_id) {}

void WireConnection::Start() {
  std::shared_ptr<FrameChannel> channel = std::move(starting_);
  hello_deadline_ =
      std::make_unique<boost::asio::steady_timer>(channel->executor(), std::chrono::milliseconds(
                                                      context_->hello_deadline_ms));
  hello_deadline_->async_wait([weak = channel_, ms = context_->hello_deadline_ms](const boost::system::error_code& ec) {
    if (ec) return;
    if (auto channel = weak.lock()) channel->Close(fmt::format("no hello within {} ms", ms));
  });
  auto self = shared_from_this();
  FrameChannel::Handlers handlers;
  handlers.on_frame = [self](std::string body) { return self->OnFrame(std::move(body)); };
  handlers.on_closed = [self](const std::string& why) { self->OnClosed(why); };
  channel->Start(std::move(handlers), kMaxHelloBytes);
}

void WireConnection::Send(const HeadMessage& message) {
  // What the loop sends this node in one turn (a burst of launches, say)
  // goes in one write, once the turn's other ready work has run: a task
  // posted from the loop itself queues without waking anything.
  const bool first = outbox_.empty();
  outbox_ += EncodeFrame(message);
  if (first) context_->loop->Post([connection = shared_from_this()] { connection->SendOutbox(); });
}

void WireConnection::SendOutbox() {
  if (outbox_.empty()) return;
  std::string frames;
  frames.swap(outbox_);
  if (auto channel = channel_.lock()) channel->Send(std::move(frames));
}

void WireConnection::Close(const Status& status) {
  SendOutbox();  // what the loop said before the end
  End(status);
}

void WireConnection::End(const Status& status) {
  auto channel = channel_.lock();
  if (!channel) return;
  ended_by_head_ = true;
  HeadMessage end;
  const grpc::Status said = ToGrpc(status);  // the one mapping of our codes, both ways
  end.mutable_end()->set_code(static_cast<int>(said.error_code()));
  end.mutable_end()->set_message(said.error_message());
  channel->Send(EncodeFrame(end));
  channel->CloseAfterSends();
}

void LogRefusedStream(const std::string& peer, const std::string& why) {
  static LogLimiter limiter(20, 10'000'000);
  int64_t held_back = 0;
  if (!limiter.Allow(SystemClock().NowMicros(), &held_back)) return;
  LOG_WARN("refused a node agent stream from {}: {}{}", peer, why,
           held_back > 0 ? fmt::format(" ({} more refused since the last such line, not logged)", held_back) : "");
}

bool WireConnection::Refuse(const Status& status) {
  LogRefusedStream(peer_, status.message());
  End(status);
  return false;
}

bool WireConnection::OnFrame(std::string body) {
  AgentMessage message;
  if (!message.ParseFromString(body)) {
    if (!past_hello_) return Refuse(Status::InvalidArgument("its first frame is not a clusterd agent's hello"));
    End(Status::InvalidArgument(fmt::format("a frame of {} bytes that is not an AgentMessage", body.size())));
    return false;
  }
  if (!past_hello_) {
    if (!message.has_hello()) {
      return Refuse(Status::Unauthenticated("missing cluster token (the first frame must be the agent's hello)"));
    }
    auto caller = context_->users->Resolve(message.hello().token());
    if (!caller.ok()) {
      std::string why = caller.status().message();
      if (why == kWrongToken) why += " (see the token file in the head's session folder)";
      if (why == kMissingToken) why += " (the first frame must be the agent's hello)";
      return Refuse(Status::Unauthenticated(why));
    }
    Status may_register = MayRegisterNode(*caller);
    if (!may_register.ok()) return Refuse(may_register);
    revocations_seen_ = context_->users->revocations();
    caller_ = std::move(*caller);
    past_hello_ = true;
    hello_deadline_.reset();  // cancels it
    if (context_->on_proven) context_->on_proven(gate_id_);
    if (auto channel = channel_.lock()) channel->set_max_frame_bytes(kMaxFrameBytes);
    return true;
  }
  if (message.has_hello()) return true;  // said once already
  if (const uint64_t revocations = context_->users->revocations(); revocations != revocations_seen_) {
    revocations_seen_ = revocations;
    Status valid = context_->users->StillValid(caller_);
    if (!valid.ok()) {
      End(valid);
      return false;
    }
  }
  HeadCore* core = context_->core;
  // A heartbeat is recorded here for the head's next tick, without a hop
  // to the event loop. Not the first message: that must register, and
  // the loop closes a stream whose first message does not.
  if (past_register_ && message.kind_case() == AgentMessage::kHeartbeat) {
    if (message.heartbeat().answer_me()) {
      // Answered here: an agent waits seconds, not for a busy loop.
      HeadMessage alive;
      alive.mutable_alive()->set_seq(message.heartbeat().seq());
      if (auto channel = channel_.lock()) channel->Send(EncodeFrame(alive));  // not the loop's outbox
    }
    RecordHeartbeat(core->clock()->NowMicros(), message.mutable_heartbeat()->mutable_usage());
    return true;
  }
  past_register_ = true;
  bool post;
  {
    // Queued for the loop; one task takes all that arrive meanwhile: a
    // burst of exits and logs costs the loop one wake-up, not one each.
    std::lock_guard<std::mutex> lock(inbox_mutex_);
    inbox_.push_back(std::move(message));
    post = inbox_.size() == 1;
  }
  if (post) {
    context_->loop->Post([core, connection = shared_from_this()] {
      std::deque<AgentMessage> taken;
      {
        std::lock_guard<std::mutex> lock(connection->inbox_mutex_);
        taken.swap(connection->inbox_);
      }
      for (const AgentMessage& each : taken) core->OnAgentMessage(connection, each);
    });
  }
  return true;
}

void WireConnection::OnClosed(const std::string& why) {
  hello_deadline_.reset();
  if (context_->on_ended) context_->on_ended(gate_id_);
  if (HeartbeatReceiver* offered = offered_by_.load()) offered->Unregister(channel_id_);
  if (!past_register_) return;  // the core never heard of it
  // The node's state reason: the detail (`why`) is the transport's.
  const char* cause = ended_by_head_ ? "stream ended" : "connection to the node agent lost";
  if (!ended_by_head_) LOG_DEBUG("node agent stream from {} ended: {}", peer_, why);
  context_->loop->Post([core = context_->core, connection = shared_from_this(), cause] {
    core->OnAgentDisconnected(connection.get(), cause);
  });
}

void WireConnection::OfferDatagramHeartbeats(Registered* ack) {
  HeartbeatReceiver* datagrams = context_->datagrams.load();
  if (!datagrams || offered_by_.load()) return;
  HeartbeatReceiver::Offer offer = datagrams->Register(weak_from_this());
  channel_id_ = offer.channel;
  offered_by_ = datagrams;
  ack->set_heartbeat_udp_port(datagrams->port());
  ack->set_heartbeat_channel(offer.channel);
  ack->set_heartbeat_key(offer.key);
}

void WireConnection::OnDatagramPath(bool heard) {
  HeadMessage path;
  path.mutable_heartbeat_path()->set_datagrams_heard(heard);
  Send(path);
}

void WireConnection::RecordHeartbeat(Micros at, NodeUsage* usage) {
  std::lock_guard<std::mutex> lock(heard_mutex_);
  if (!heard_) heard_.emplace();
  heard_->at = at;
  heard_->usage.Swap(usage);
}

std::optional<AgentConnection::Heard> WireConnection::TakeHeartbeat() {
  std::lock_guard<std::mutex> lock(heard_mutex_);
  std::optional<Heard> taken;
  taken.swap(heard_);
  return taken;
}

}  // namespace clusterd
