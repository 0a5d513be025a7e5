#include "node_fleet.h"

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>

#include <fmt/format.h>

#include <algorithm>

#include <sys/socket.h>
#include <unistd.h>

#include "agent.grpc.pb.h"
#include "common/net/auth.h"
#include "common/net/frame_channel.h"
#include "common/net/heartbeat_datagram.h"
#include "common/net/net_address.h"
#include "common/session.h"

namespace clusterd::bench {

// One simulated agent: its connection's handlers run on the fleet's io
// thread, its beats on the ticker thread, so what both touch is under a lock.
class NodeFleet::SimNode {
 public:
  SimNode(NodeFleet* fleet, std::shared_ptr<FrameChannel> channel, const RegisterNode& registration)
      : fleet_(fleet), channel_(std::move(channel)) {
    FrameChannel::Handlers handlers;
    handlers.on_frame = [this](std::string body) {
      HeadMessage message;
      if (message.ParseFromString(body)) OnMessage(message);
      return true;
    };
    handlers.on_closed = [this](const std::string&) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        Break();
      }
      std::lock_guard<std::mutex> lock(fleet_->done_mutex_);
      fleet_->done_++;
      fleet_->done_changed_.notify_all();
    };
    channel_->Start(std::move(handlers), kMaxFrameBytes);
    AgentMessage hello, registering;
    hello.mutable_hello()->set_token(fleet->options_.token);
    *registering.mutable_register_() = registration;
    channel_->Send(EncodeFrame(hello) + EncodeFrame(registering));
  }

  // ask: this beat asks the head for an answer.
  void Beat(int64_t seq, bool ask) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (broken_) return;
      if (datagram_fd_ >= 0) {
        const std::string datagram = EncodeHeartbeat(channel_id_, key_, seq, NodeUsage(), ask ? kAnswerMe : 0);
        (void)send(datagram_fd_, datagram.data(), datagram.size(), MSG_DONTWAIT);
        if (heard_) {
          fleet_->heartbeats_++;
          return;
        }
      }
    }
    AgentMessage beat;
    beat.mutable_heartbeat()->set_seq(seq);
    beat.mutable_heartbeat()->set_answer_me(ask);
    fleet_->heartbeats_++;
    channel_->Send(EncodeFrame(beat));
  }

  void Close() { channel_->Close("the fleet stops"); }

 private:
  void OnMessage(const HeadMessage& message) {
    if (message.has_registered() && !registered_) {
      registered_ = true;
      const Registered& ack = message.registered();
      if (ack.heartbeat_udp_port() > 0) {
        int fd = fleet_->DatagramSocket(ack.heartbeat_udp_port());
        std::lock_guard<std::mutex> lock(mutex_);
        datagram_fd_ = fd;
        channel_id_ = ack.heartbeat_channel();
        key_ = ack.heartbeat_key();
      }
      fleet_->registered_++;
    }
    if (message.has_alive()) fleet_->answers_++;
    if (message.has_heartbeat_path()) {
      std::lock_guard<std::mutex> lock(mutex_);
      const bool heard = message.heartbeat_path().datagrams_heard();
      if (heard != heard_) fleet_->heard_by_datagram_ += heard ? 1 : -1;
      heard_ = heard;
    }
  }

  void Break() {  // mutex_ held
    if (broken_) return;
    broken_ = true;
    if (!fleet_->stopping_) fleet_->lost_++;
  }

  NodeFleet* fleet_;
  std::shared_ptr<FrameChannel> channel_;
  std::mutex mutex_;
  bool broken_ = false;
  int datagram_fd_ = -1;  // the fleet's, once the head offered datagrams
  uint64_t channel_id_ = 0;
  std::string key_;
  bool heard_ = false;       // the head hears this node's datagrams: the stream carries none
  bool registered_ = false;  // io thread only
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
    // 10,000 nodes' datagrams leave in bursts of the ticker's 5 ms, and
    // the head's answers come back in bursts too, read between ticks.
    int buffer = 4 << 20;
    setsockopt(*fd, SOL_SOCKET, SO_SNDBUF, &buffer, sizeof buffer);
    setsockopt(*fd, SOL_SOCKET, SO_RCVBUF, &buffer, sizeof buffer);
    datagram_fd_ = *fd;
  });
  return datagram_fd_;
}

void NodeFleet::DrainAnswers() {
  if (datagram_fd_ < 0) return;
  char buffer[kMaxHeartbeatDatagram];
  while (recv(datagram_fd_, buffer, sizeof buffer, MSG_DONTWAIT) > 0) answers_++;
}

bool NodeFleet::Start(std::string* error) {
  started_ = true;
  auto head = ParseHostPort(options_.address);
  if (!head.ok()) {
    *error = head.status().message();
    return false;
  }
  // Where the agent port is, as an agent asks.
  int port = 0;
  {
    auto stub = NodeAgentService::NewStub(DialHead(options_.address, options_.tls));
    grpc::ClientContext context;
    AttachToken(&context, options_.token);
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    LocateRequest request;
    AgentEndpoint reply;
    grpc::Status status = stub->Locate(&context, request, &reply);
    if (!status.ok()) {
      *error = "Locate: " + status.error_message();
      return false;
    }
    port = reply.port();
  }
  io_thread_ = std::thread([this] {
    auto work = boost::asio::make_work_guard(io_);  // until Stop
    io_.run();
  });
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
    auto channel = DialFrameChannel(&io_, head->host, port, options_.tls, 10000);
    if (!channel.ok()) {
      *error = fmt::format("node {}: {}", i, channel.status().message());
      return false;
    }
    nodes_[static_cast<size_t>(i)] = std::make_unique<SimNode>(this, std::move(*channel), registration);
    made_.store(i + 1, std::memory_order_release);
  }
  return true;
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
  const int made = made_.load();
  for (int i = 0; i < made; ++i) nodes_[static_cast<size_t>(i)]->Close();
  {
    std::unique_lock<std::mutex> lock(done_mutex_);
    done_changed_.wait(lock, [&] { return done_ == made; });
  }
  boost::asio::post(io_, [this] { io_.stop(); });
  if (io_thread_.joinable()) io_thread_.join();
}

}  // namespace clusterd::bench
