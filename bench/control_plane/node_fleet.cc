#include "node_fleet.h"

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>

#include <fmt/format.h>

#include <algorithm>

#include <sys/socket.h>
#include <unistd.h>

#include "common/auth.h"
#include "common/heartbeat_datagram.h"
#include "common/net_address.h"
#include "common/session.h"
#include "daemon/agent/head_liveness.h"

namespace clusterd::bench {

// One simulated agent. Writes come from the ticker thread and completions
// from gRPC's threads, so the in-flight flag is under a lock; gRPC allows
// one outstanding write per stream, a heartbeat due while one is still in
// flight is skipped (a real agent would queue it; at 2 per second it never
// happens unless the head stalls, which lost()/heartbeats_sent() reveal).
class NodeFleet::SimNode : public grpc::ClientBidiReactor<AgentMessage, HeadMessage> {
 public:
  SimNode(NodeFleet* fleet, NodeAgentService::Stub* stub, const RegisterNode& registration)
      : fleet_(fleet) {
    AttachToken(&context_, fleet->options_.token);
    stub->async()->Connect(&context_, this);
    *outgoing_.mutable_register_() = registration;
    writing_ = true;
    StartWrite(&outgoing_);
    StartRead(&incoming_);
    // The hold keeps OnDone away until Stop(): the ticker may start a write
    // at any time, which is only allowed before OnDone.
    AddHold();
    StartCall();
  }

  // ask: this beat asks the head for an answer.
  void Beat(int64_t seq, bool ask) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (broken_) return;
      if (datagram_fd_ >= 0) {
        const std::string datagram = EncodeHeartbeat(channel_, key_, seq, NodeUsage(), ask ? kAnswerMe : 0);
        (void)send(datagram_fd_, datagram.data(), datagram.size(), MSG_DONTWAIT);
        if (heard_) {
          fleet_->heartbeats_++;
          return;
        }
      }
      if (writing_) return;
      writing_ = true;
      outgoing_.Clear();
      outgoing_.mutable_heartbeat()->set_seq(seq);
      outgoing_.mutable_heartbeat()->set_answer_me(ask);
    }
    fleet_->heartbeats_++;
    StartWrite(&outgoing_);  // outside the lock: gRPC may run OnWriteDone inline
  }

  void Cancel() {
    context_.TryCancel();
    RemoveHold();
  }

  void OnWriteDone(bool ok) override {
    std::lock_guard<std::mutex> lock(mutex_);
    writing_ = false;
    if (!ok) Break();
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      std::lock_guard<std::mutex> lock(mutex_);
      Break();
      return;
    }
    if (incoming_.has_registered() && !registered_) {
      registered_ = true;
      const Registered& ack = incoming_.registered();
      if (ack.heartbeat_udp_port() > 0) {
        int fd = fleet_->DatagramSocket(ack.heartbeat_udp_port());
        std::lock_guard<std::mutex> lock(mutex_);
        datagram_fd_ = fd;
        channel_ = ack.heartbeat_channel();
        key_ = ack.heartbeat_key();
      }
      fleet_->registered_++;
    }
    if (incoming_.has_alive()) fleet_->answers_++;
    if (incoming_.has_heartbeat_path()) {
      std::lock_guard<std::mutex> lock(mutex_);
      const bool heard = incoming_.heartbeat_path().datagrams_heard();
      if (heard != heard_) fleet_->heard_by_datagram_ += heard ? 1 : -1;
      heard_ = heard;
    }
    incoming_.Clear();
    StartRead(&incoming_);
  }

  void OnDone(const grpc::Status&) override {
    std::lock_guard<std::mutex> lock(fleet_->done_mutex_);
    fleet_->done_++;
    fleet_->done_changed_.notify_all();
  }

 private:
  void Break() {  // mutex_ held
    if (broken_) return;
    broken_ = true;
    if (!fleet_->stopping_) fleet_->lost_++;
  }

  NodeFleet* fleet_;
  grpc::ClientContext context_;
  AgentMessage outgoing_;
  HeadMessage incoming_;
  std::mutex mutex_;
  bool writing_ = false;
  bool broken_ = false;
  int datagram_fd_ = -1;  // the fleet's, once the head offered datagrams
  uint64_t channel_ = 0;
  std::string key_;
  bool heard_ = false;       // the head hears this node's datagrams: the stream carries none
  bool registered_ = false;  // touched only by the read chain
};

NodeFleet::NodeFleet(FleetOptions options) : options_(std::move(options)) {}

NodeFleet::~NodeFleet() {
  Stop();
  if (datagram_fd_ >= 0) close(datagram_fd_);
}

int NodeFleet::DatagramSocket(int port) {
  std::call_once(datagram_once_, [&] {
    auto head = ParseHostPort(options_.address);
    if (!head.ok()) return;
    auto fd = ConnectUdp(head->host, port);
    if (!fd.ok()) return;
    // 10,000 nodes' datagrams leave in bursts of the ticker's 5 ms.
    int buffer = 4 << 20;
    setsockopt(*fd, SOL_SOCKET, SO_SNDBUF, &buffer, sizeof buffer);
    datagram_fd_ = *fd;
  });
  return datagram_fd_;
}

void NodeFleet::DrainAnswers() {
  if (datagram_fd_ < 0) return;
  char buffer[kMaxHeartbeatDatagram];
  while (recv(datagram_fd_, buffer, sizeof buffer, MSG_DONTWAIT) > 0) answers_++;
}

void NodeFleet::Start() {
  started_ = true;
  int channel_count = (options_.nodes + options_.streams_per_channel - 1) / options_.streams_per_channel;
  for (int i = 0; i < channel_count; ++i) {
    // Channels with equal arguments would share one subchannel (one TCP
    // connection); a local pool plus a distinct argument keeps them apart.
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    args.SetInt("clusterd.bench.channel", i);
    args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, kTransportKeepaliveMs);
    args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 2000);
    args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
    args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
    channels_.push_back(NodeAgentService::NewStub(
        grpc::CreateCustomChannel(options_.address, grpc::InsecureChannelCredentials(), args)));
  }
  // The ticker beats for the nodes made so far while the rest are made: with
  // a connection per node, making 3,000 takes longer than a node timeout.
  nodes_.resize(static_cast<size_t>(options_.nodes));
  ticker_ = std::thread([this] { Tick(); });
  for (int i = 0; i < options_.nodes; ++i) {
    RegisterNode registration;
    registration.set_name(fmt::format("{}-{:04d}", options_.name_prefix, i));
    registration.set_name_given(true);
    registration.set_address("127.0.0.1");
    (*registration.mutable_total()->mutable_amounts())["CPU"] = 1;
    registration.set_instance_id(fmt::format("bench-{}-{}-{}", getpid(), options_.name_prefix, i));
    nodes_[static_cast<size_t>(i)] =
        std::make_unique<SimNode>(this, channels_[i / options_.streams_per_channel].get(), registration);
    made_.store(i + 1, std::memory_order_release);
  }
}

// Node i beats at phase i/N of the period, so the head sees a steady rate
// rather than N messages at once every period, as with independent agents.
void NodeFleet::Tick() {
  using Clock = std::chrono::steady_clock;
  const auto period = std::chrono::milliseconds(options_.heartbeat_ms);
  const auto start = Clock::now();
  std::vector<Clock::time_point> next(nodes_.size());
  for (size_t i = 0; i < nodes_.size(); ++i) next[i] = start + period * i / nodes_.size();
  // An agent asks once it has heard nothing for keepalive_ms, and reads
  // the answer at its next beat: one beat in this many asks.
  const int64_t ask_every = options_.keepalive_ms / std::max(options_.heartbeat_ms, 1) + 1;
  std::vector<int64_t> beats(nodes_.size(), 0);
  int64_t seq = 0;
  while (!stopping_) {
    DrainAnswers();
    auto now = Clock::now();
    const size_t made = static_cast<size_t>(made_.load(std::memory_order_acquire));
    for (size_t i = 0; i < made; ++i) {
      if (next[i] > now) continue;
      nodes_[i]->Beat(++seq, ++beats[i] % ask_every == 0);
      next[i] += period;
      if (next[i] < now) next[i] = now + period;  // fell behind: do not burst
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

bool NodeFleet::WaitRegistered(std::chrono::milliseconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (registered_ < options_.nodes) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

void NodeFleet::Stop() {
  if (!started_ || stopped_) return;
  stopped_ = true;
  stopping_ = true;
  if (ticker_.joinable()) ticker_.join();
  for (auto& node : nodes_) node->Cancel();
  std::unique_lock<std::mutex> lock(done_mutex_);
  done_changed_.wait(lock, [this] { return done_ == static_cast<int>(nodes_.size()); });
}

}  // namespace clusterd::bench
