#include "daemon/rpc/agent_service.h"

#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>

#include "common/auth.h"
#include "common/grpc_status.h"
#include "common/logging.h"

namespace clusterd {

namespace {

using Reactor = grpc::ServerBidiReactor<AgentMessage, HeadMessage>;

// The AgentConnection the core holds. It outlives the reactor (gRPC deletes
// that in OnDone), so it reaches the reactor through a pointer under a lock.
// Writes are queued: gRPC allows one in flight per stream.
class StreamConnection : public AgentConnection,
                         public HeartbeatReceiver::Listener,
                         public std::enable_shared_from_this<StreamConnection> {
 public:
  StreamConnection(Reactor* reactor, std::string peer, const std::atomic<HeartbeatReceiver*>* datagrams)
      : reactor_(reactor), peer_(std::move(peer)), datagrams_(datagrams) {}

  void Send(const HeadMessage& message) override {
    const HeadMessage* start = nullptr;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!reactor_ || finished_ || pending_finish_) return;
      queue_.push_back(message);
      if (writing_) return;
      writing_ = true;
      start = &queue_.front();  // deque keeps references stable on push_back
    }
    reactor_->StartWrite(start);
  }

  void Close(const Status& status) override { Finish(ToGrpc(status)); }
  std::string Peer() const override { return peer_; }

  void Finish(const grpc::Status& status) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!reactor_ || finished_) return;
      if (writing_) {  // finish once the queued writes are out
        if (!pending_finish_) pending_finish_ = status;
        return;
      }
      finished_ = true;
    }
    reactor_->Finish(status);
  }

  void OnWriteDone(bool ok) {
    const HeadMessage* next = nullptr;
    grpc::WriteOptions options;
    std::optional<grpc::Status> finish;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.pop_front();
      if (!ok) queue_.clear();
      if (!queue_.empty()) {
        next = &queue_.front();
        // More follow it: gRPC may hold this one and send them together
        // (one frame and one syscall for a burst of launches); the last
        // of a burst goes without the hint, which sends everything.
        if (queue_.size() > 1) options.set_buffer_hint();
      } else {
        writing_ = false;
        if (pending_finish_ && !finished_) {
          finish = pending_finish_;
          finished_ = true;
        }
      }
    }
    if (next) reactor_->StartWrite(next, options);
    if (finish) reactor_->Finish(*finish);
  }

  void Detach() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      reactor_ = nullptr;
    }
    if (HeartbeatReceiver* offered = offered_by_.load()) offered->Unregister(channel_);
  }

  // Called on the loop, once per stream (a second registration closes it).
  void OfferDatagramHeartbeats(Registered* ack) override {
    HeartbeatReceiver* datagrams = datagrams_->load();
    if (!datagrams || offered_by_.load()) return;
    HeartbeatReceiver::Offer offer = datagrams->Register(weak_from_this());
    channel_ = offer.channel;
    offered_by_ = datagrams;
    ack->set_heartbeat_udp_port(datagrams->port());
    ack->set_heartbeat_channel(offer.channel);
    ack->set_heartbeat_key(offer.key);
  }

  void OnHeartbeatDatagram(Micros at, NodeUsage* usage) override { RecordHeartbeat(at, usage); }

  void OnDatagramPath(bool heard) override {
    HeadMessage path;
    path.mutable_heartbeat_path()->set_datagrams_heard(heard);
    Send(path);
  }

  // Keeps the newest; an unread older one is simply replaced.
  void RecordHeartbeat(Micros at, NodeUsage* usage) {
    std::lock_guard<std::mutex> lock(heard_mutex_);
    if (!heard_) heard_.emplace();
    heard_->at = at;
    heard_->usage.Swap(usage);
  }

  // Queues a message for the event loop; true when the queue was empty, so
  // the caller posts one task that takes all that arrive meanwhile: a burst
  // of exits and logs costs the loop one wake-up, not one each.
  bool PutInInbox(AgentMessage message) {
    std::lock_guard<std::mutex> lock(inbox_mutex_);
    inbox_.push_back(std::move(message));
    return inbox_.size() == 1;
  }
  std::deque<AgentMessage> TakeInbox() {
    std::lock_guard<std::mutex> lock(inbox_mutex_);
    std::deque<AgentMessage> taken;
    taken.swap(inbox_);
    return taken;
  }

  std::optional<Heard> TakeHeartbeat() override {
    std::lock_guard<std::mutex> lock(heard_mutex_);
    std::optional<Heard> taken;
    taken.swap(heard_);
    return taken;
  }

 private:
  std::mutex heard_mutex_;  // guards heard_ only, so a heartbeat never waits on a write
  std::optional<Heard> heard_;
  std::mutex inbox_mutex_;  // guards inbox_ only
  std::deque<AgentMessage> inbox_;
  std::mutex mutex_;
  Reactor* reactor_;
  std::string peer_;
  const std::atomic<HeartbeatReceiver*>* datagrams_;  // the service's, set once its server runs
  // Set on the loop at registration, read where the reactor ends.
  std::atomic<HeartbeatReceiver*> offered_by_{nullptr};
  uint64_t channel_ = 0;  // written before offered_by_, read after it
  std::deque<HeadMessage> queue_;
  bool writing_ = false;
  bool finished_ = false;
  std::optional<grpc::Status> pending_finish_;
};

class AgentStream final : public Reactor {
 public:
  AgentStream(grpc::CallbackServerContext* context, HeadCore* core, EventLoop* loop,
              const std::atomic<HeartbeatReceiver*>* datagrams)
      : core_(core), loop_(loop),
        connection_(std::make_shared<StreamConnection>(this, context->peer(), datagrams)) {
    StartRead(&incoming_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      // The agent closed its side or the connection broke (its process died).
      ReportDisconnected("connection to the node agent lost");
      connection_->Finish(grpc::Status::OK);
      return;
    }
    // A heartbeat is recorded here for the head's next tick, without a hop
    // to the event loop. Not the first message: that must register, and
    // the loop closes a stream whose first message does not.
    if (past_first_message_ && incoming_.kind_case() == AgentMessage::kHeartbeat) {
      if (incoming_.heartbeat().answer_me()) {
        // Answered here, as gRPC answered its keepalive pings: an agent
        // waits seconds, not for a busy loop.
        HeadMessage alive;
        alive.mutable_alive()->set_seq(incoming_.heartbeat().seq());
        connection_->Send(alive);
      }
      connection_->RecordHeartbeat(core_->clock()->NowMicros(), incoming_.mutable_heartbeat()->mutable_usage());
      incoming_.Clear();
      StartRead(&incoming_);
      return;
    }
    past_first_message_ = true;
    const bool post = connection_->PutInInbox(std::move(incoming_));
    incoming_.Clear();
    if (post) {
      loop_->Post([core = core_, connection = connection_] {
        for (const AgentMessage& message : connection->TakeInbox()) core->OnAgentMessage(connection, message);
      });
    }
    StartRead(&incoming_);
  }

  void OnWriteDone(bool ok) override { connection_->OnWriteDone(ok); }

  void OnDone() override {
    connection_->Detach();
    ReportDisconnected("stream ended");
    delete this;
  }

 private:
  void ReportDisconnected(const char* cause) {
    if (reported_) return;
    reported_ = true;
    loop_->Post([core = core_, connection = connection_, cause] {
      core->OnAgentDisconnected(connection.get(), cause);
    });
  }

  HeadCore* core_;
  EventLoop* loop_;
  std::shared_ptr<StreamConnection> connection_;
  AgentMessage incoming_;
  bool reported_ = false;  // touched only from this reactor's own callbacks
  bool past_first_message_ = false;  // the first must register, which the loop checks; likewise
};

// Answers a stream that failed the token check, then goes away.
class RefusedStream final : public Reactor {
 public:
  explicit RefusedStream(const grpc::Status& status) { Finish(status); }
  void OnDone() override { delete this; }
};

}  // namespace

grpc::ServerBidiReactor<AgentMessage, HeadMessage>* AgentService::Connect(
    grpc::CallbackServerContext* context) {
  grpc::Status auth = CheckToken(*context, token_);
  if (!auth.ok()) {
    LOG_WARN("refused a node agent stream from {}: {}", context->peer(), auth.error_message());
    return new RefusedStream(auth);
  }
  return new AgentStream(context, core_, loop_, &datagrams_);
}

}  // namespace clusterd
