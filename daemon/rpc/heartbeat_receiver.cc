#include "daemon/rpc/heartbeat_receiver.h"

#include <netdb.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "common/net/heartbeat_datagram.h"
#include "common/logging.h"
#include "common/net/net_address.h"
#include "common/session.h"
#include "common/threads.h"

namespace clusterd {

namespace {

// Datagrams one recvmmsg takes. Fixed: it only sizes the read's buffers on
// the stack; more that wait are taken by the next read at once.
constexpr int kBatch = 64;
// After a wake-up the thread waits this long before reading again, so
// that at 20,000 datagrams a second one wake-up takes ~100 of them, not
// one. A heartbeat is then recorded at most this late: nothing next to a
// node timeout of seconds.
constexpr int kGatherMs = 5;
// Silence, in heartbeat periods, after which a stream is told to send its
// heartbeats itself again: well inside the default node timeout (4 periods),
// so that the node does not die of a dropped path while its stream is up.
constexpr int kSilentPeriods = 2;

// The answers to one batch of heartbeats, sent together.
class Answers {
 public:
  void Add(std::string datagram, const sockaddr_storage& to, socklen_t to_length) {
    if (!datagram.empty()) answers_.push_back({std::move(datagram), to, to_length});
  }
  void Clear() { answers_.clear(); }
  // Returns how many went.
  uint64_t SendAll(int fd);

 private:
  struct Answer {
    std::string datagram;
    sockaddr_storage to;
    socklen_t to_length;
  };
  std::vector<Answer> answers_;
};

uint64_t Answers::SendAll(int fd) {
  const size_t count = answers_.size();
  std::vector<iovec> vectors(count);
  std::vector<mmsghdr> messages(count);
  for (size_t i = 0; i < count; ++i) {
    vectors[i] = {answers_[i].datagram.data(), answers_[i].datagram.size()};
    messages[i] = {};
    messages[i].msg_hdr.msg_iov = &vectors[i];
    messages[i].msg_hdr.msg_iovlen = 1;
    messages[i].msg_hdr.msg_name = &answers_[i].to;
    messages[i].msg_hdr.msg_namelen = answers_[i].to_length;
  }
  // Best effort, as the heartbeats are: an answer that cannot go now (a
  // full buffer, no route back) is one the agent asks for again.
  uint64_t sent = 0;
  size_t next = 0;
  while (next < count) {
    int went = sendmmsg(fd, messages.data() + next, static_cast<unsigned>(count - next), MSG_DONTWAIT);
    if (went <= 0) {
      ++next;  // sendmmsg stops at the first failure: skip that one
      continue;
    }
    sent += static_cast<uint64_t>(went);
    next += static_cast<size_t>(went);
  }
  return sent;
}

}  // namespace

Result<std::unique_ptr<HeartbeatReceiver>> HeartbeatReceiver::Start(const std::string& ip, int port,
                                                                    const Clock* clock, int heartbeat_ms) {
  auto bound_socket = BindUdp(ip, port);
  if (!bound_socket.ok()) return bound_socket.status().WithContext("heartbeat socket");
  const int fd = *bound_socket;
  // Room for a few hundred ms of 10,000 nodes' datagrams should the thread
  // be kept off a CPU. Past net.core.rmem_max only as root (FORCE); else
  // as much as that allows (Debian's default: ~200 KiB, ~10 ms of them).
  int buffer = 4 << 20;
  if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buffer, sizeof buffer) != 0) {
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buffer, sizeof buffer);
  }
  sockaddr_storage bound{};
  socklen_t length = sizeof bound;
  getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length);
  int bound_port = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                                     : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  int wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake < 0) {
    close(fd);
    return Status::Internal(fmt::format("heartbeat socket: eventfd: {}", std::strerror(errno)));
  }
  return std::unique_ptr<HeartbeatReceiver>(new HeartbeatReceiver(fd, wake, bound_port, clock, heartbeat_ms));
}

HeartbeatReceiver::HeartbeatReceiver(int fd, int wake_fd, int port, const Clock* clock, int heartbeat_ms)
    : fd_(fd), wake_fd_(wake_fd), port_(port), clock_(clock), heartbeat_us_(Micros{heartbeat_ms} * 1000) {
  thread_ = std::thread([this] { Run(); });
}

HeartbeatReceiver::~HeartbeatReceiver() {
  uint64_t one = 1;
  if (write(wake_fd_, &one, sizeof one) < 0) LOG_WARN("heartbeat socket: cannot wake its thread: {}", std::strerror(errno));
  if (thread_.joinable()) thread_.join();
  close(fd_);
  close(wake_fd_);
}

HeartbeatReceiver::Offer HeartbeatReceiver::Register(std::weak_ptr<Listener> listener) {
  Offer offer{0, NewToken()};
  std::lock_guard<std::mutex> lock(mutex_);
  offer.channel = next_channel_++;
  Channel& channel = channels_[offer.channel];
  channel.listener = std::move(listener);
  channel.key = offer.key;
  channel.last_heard = clock_->NowMicros();
  return offer;
}

void HeartbeatReceiver::Unregister(uint64_t channel) {
  std::lock_guard<std::mutex> lock(mutex_);
  channels_.erase(channel);
}

void HeartbeatReceiver::Run() {
  CountedThread counted("heartbeat-udp");
  Micros next_look = clock_->NowMicros() + heartbeat_us_ / 2;
  pollfd wake{wake_fd_, POLLIN, 0};
  while (true) {
    pollfd both[2] = {{fd_, POLLIN, 0}, wake};
    const Micros now = clock_->NowMicros();
    int wait_ms = static_cast<int>(std::max<Micros>(0, (next_look - now + 999) / 1000));
    if (poll(both, 2, wait_ms) < 0 && errno != EINTR) {
      LOG_ERROR("heartbeat socket: poll failed, datagrams are no longer read: {}", std::strerror(errno));
      return;
    }
    if (both[1].revents) return;
    if (both[0].revents) Drain();
    if (clock_->NowMicros() >= next_look) {
      LookForSilence();
      next_look = clock_->NowMicros() + heartbeat_us_ / 2;
    }
    if (both[0].revents && poll(&wake, 1, kGatherMs) > 0) return;
  }
}

void HeartbeatReceiver::Drain() {
  char buffers[kBatch][kMaxHeartbeatDatagram + 1];
  sockaddr_storage senders[kBatch];
  iovec vectors[kBatch];
  mmsghdr messages[kBatch];
  for (int i = 0; i < kBatch; ++i) {
    vectors[i] = {buffers[i], sizeof buffers[i]};
    messages[i] = {};
    messages[i].msg_hdr.msg_iov = &vectors[i];
    messages[i].msg_hdr.msg_iovlen = 1;
    messages[i].msg_hdr.msg_name = &senders[i];
  }
  struct Heard {
    std::shared_ptr<Listener> listener;
    NodeUsage usage;
    bool first = false;
  };
  std::vector<Heard> heard;
  Answers answers;
  int got = kBatch;
  while (got == kBatch) {
    for (int i = 0; i < kBatch; ++i) messages[i].msg_hdr.msg_namelen = sizeof senders[i];
    got = recvmmsg(fd_, messages, kBatch, MSG_DONTWAIT, nullptr);
    if (got <= 0) return;
    const Micros at = clock_->NowMicros();
    heard.clear();
    answers.Clear();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (int i = 0; i < got; ++i) {
        const char* data = buffers[i];
        const size_t size = messages[i].msg_len;
        uint64_t id = 0;
        int64_t seq = 0;
        uint8_t flags = 0;
        NodeUsage usage;
        auto channel = PeekHeartbeatChannel(data, size, &id) ? channels_.find(id) : channels_.end();
        if (channel == channels_.end() || (messages[i].msg_hdr.msg_flags & MSG_TRUNC) ||
            !DecodeHeartbeat(data, size, channel->second.key, &seq, &usage, &flags) ||
            seq <= channel->second.last_seq) {
          ++rejected_;
          continue;
        }
        ++accepted_;
        Channel& c = channel->second;
        c.last_seq = seq;
        c.last_heard = at;
        if (flags & kAnswerMe) {
          answers.Add(EncodeHeartbeatAnswer(id, c.key, seq), senders[i], messages[i].msg_hdr.msg_namelen);
        }
        std::shared_ptr<Listener> listener = c.listener.lock();
        if (!listener) continue;
        heard.push_back({std::move(listener), std::move(usage), !c.heard});
        c.heard = true;
      }
    }
    answered_ += answers.SendAll(fd_);
    for (Heard& h : heard) {
      h.listener->OnHeartbeatDatagram(at, &h.usage);
      if (h.first) h.listener->OnDatagramPath(true);
    }
  }
}

void HeartbeatReceiver::LookForSilence() {
  const Micros silent_before = clock_->NowMicros() - kSilentPeriods * heartbeat_us_;
  std::vector<std::shared_ptr<Listener>> silent;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // Only the silent are looked at closely: this walks every channel
    // twice a period, and locking 10,000 weak pointers each time cost 4% of
    // the head. A stream that ends unregisters its channel itself.
    for (auto it = channels_.begin(); it != channels_.end();) {
      Channel& c = it->second;
      if (!c.heard || c.last_heard >= silent_before) {
        ++it;
        continue;
      }
      c.heard = false;
      std::shared_ptr<Listener> listener = c.listener.lock();
      if (!listener) {
        it = channels_.erase(it);
        continue;
      }
      silent.push_back(std::move(listener));
      ++it;
    }
  }
  for (auto& listener : silent) listener->OnDatagramPath(false);
}

}  // namespace clusterd
