#include "daemon/rpc/grpc_port_listener.h"

#include <arpa/inet.h>
#include <malloc.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <grpcpp/server_posix.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>

#include <fmt/format.h>

#include "common/net/auth.h"
#include "common/logs/log_limiter.h"
#include "common/logging.h"
#include "common/net/net_address.h"
#include "common/threads.h"

namespace clusterd {
namespace {

int64_t SteadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The address a connection came from, without its port; an IPv4 client of
// a dual-stack socket is written as IPv4, so that it has one count.
std::string SourceOf(const sockaddr_storage& from) {
  char text[INET6_ADDRSTRLEN] = {};
  if (from.ss_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(from).sin_addr, text, sizeof text);
  } else if (from.ss_family == AF_INET6) {
    const in6_addr& address = reinterpret_cast<const sockaddr_in6&>(from).sin6_addr;
    if (IN6_IS_ADDR_V4MAPPED(&address)) {
      inet_ntop(AF_INET, &address.s6_addr[12], text, sizeof text);
    } else {
      inet_ntop(AF_INET6, &address, text, sizeof text);
    }
  }
  return text;
}

uint64_t InodeOf(int fd) {
  struct stat info {};
  if (fstat(fd, &info) != 0 || !S_ISSOCK(info.st_mode)) return 0;
  return info.st_ino;
}

// Once the process is out of descriptors this would be written per accept.
LogLimiter& ShedLog() {
  static LogLimiter limiter(1, 10'000'000);
  return limiter;
}

// Connections taken at one wake-up, so that a flood of them still lets
// the thread sweep; and how often it ends those past their unproven
// timeout. Fixed: the sweep ends a connection at most 1 s after its
// timeout (unproven_connection_timeout_ms, seconds), and the batch only
// takes turns with the sweep.
constexpr int kAcceptBatch = 256;
constexpr int kSweepEveryMs = 1000;

}  // namespace

GrpcPortListener::GrpcPortListener(PortGuard guard, TlsBridge* tls)
    : guard_(guard), reserve_(guard.reserve_descriptors), gate_(guard.gate), tls_(tls) {}

GrpcPortListener::~GrpcPortListener() {
  Stop();
  if (listen_fd_ >= 0) close(listen_fd_);
  if (wake_fd_ >= 0) close(wake_fd_);
}

Status GrpcPortListener::Bind(const std::string& ip, int port) {
  ASSIGN_OR_RETURN(int fd, BindTcp(ip, port));
  if (listen(fd, SOMAXCONN) != 0) {
    Status failed = Status::Unavailable(fmt::format("cannot listen on {}:{}: {}", ip, port, std::strerror(errno)));
    close(fd);
    return failed;
  }
  sockaddr_storage local{};
  socklen_t length = sizeof local;
  getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length);
  port_ = ntohs(local.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6&>(local).sin6_port
                                            : reinterpret_cast<sockaddr_in&>(local).sin_port);
  listen_fd_ = fd;
  wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) return Status::Internal(fmt::format("eventfd: {}", std::strerror(errno)));
  return Status::Ok();
}

void GrpcPortListener::Serve(grpc::Server* server) {
  server_ = server;
  AddTokenObserver(this);
  thread_ = std::thread([this] {
    CountedThread counted("grpc-accept");
    Run();
  });
}

void GrpcPortListener::Stop() {
  if (!thread_.joinable()) return;
  uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof one);
  thread_.join();
  RemoveTokenObserver(this);
}

void GrpcPortListener::Run() {
  for (;;) {
    pollfd polled[2] = {{wake_fd_, POLLIN, 0}, {listen_fd_, POLLIN, 0}};
    int ready = poll(polled, 2, kSweepEveryMs);
    if (ready < 0 && errno != EINTR) {
      LOG_WARN("gRPC port: poll failed: {}", std::strerror(errno));
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      continue;
    }
    if (polled[0].revents) return;
    if (polled[1].revents) AcceptSome();
    const int64_t now = SteadyMs();
    if (now >= next_sweep_ms_) {
      Sweep(now);
      next_sweep_ms_ = now + kSweepEveryMs;
    }
  }
}

void GrpcPortListener::AcceptSome() {
  for (int i = 0; i < kAcceptBatch; ++i) {
    sockaddr_storage from{};
    socklen_t length = sizeof from;
    int fd = accept4(listen_fd_, reinterpret_cast<sockaddr*>(&from), &length, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      const int error = errno;
      if (error == EINTR || error == ECONNABORTED || error == EPROTO) continue;
      if (OutOfDescriptors(error)) {
        int shed = reserve_.Shed(listen_fd_);
        std::lock_guard<std::mutex> lock(mutex_);
        shed_ += shed;
        // gRPC holds the connections: the oldest unproven one is ended,
        // and its descriptor is free once gRPC has closed it.
        if (!handed_.empty()) {
          const ConnectionGate::Id oldest =
              std::min_element(handed_.begin(), handed_.end(), [](const auto& a, const auto& b) {
                return a.second.id < b.second.id;
              })->second.id;
          Evict({oldest});
          gate_.Closed(oldest);
        }
        int64_t held_back = 0;
        if (ShedLog().Allow(SteadyMs() * 1000, &held_back)) {
          LOG_WARN("gRPC port: out of file descriptors ({}); closed {} waiting connection(s) to keep the port "
                   "answering ({} in all)", std::strerror(error), shed, shed_);
        }
      } else if (error != EAGAIN && error != EWOULDBLOCK) {
        LOG_WARN("gRPC port: accept failed: {}", std::strerror(error));
      }
      return;
    }
    reserve_.Refill();
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    ConnectionGate::Id id = 0;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      // The descriptor's number came back: what gRPC held under it is gone.
      for (auto* held : {&handed_, &bridging_}) {
        auto stale = held->find(fd);
        if (stale == held->end()) continue;
        gate_.Closed(stale->second.id);
        fds_.erase(stale->second.id);
        held->erase(stale);
      }
      std::vector<ConnectionGate::Id> evict;
      id = gate_.Admit(SourceOf(from), &evict);
      Evict(evict);
      if (tls_) {
        bridging_[fd] = HandedOver{id, InodeOf(fd), SteadyMs()};
        fds_[id] = fd;
      }
    }
    if (!tls_) {
      GiveToGrpc(fd, id);
      continue;
    }
    tls_->Bridge(fd, [this, fd, id](int grpc_end) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        auto bridging = bridging_.find(fd);
        if (bridging == bridging_.end() || bridging->second.id != id) {
          // Evicted during its handshake: the relay ends once this end closes.
          close(grpc_end);
          return;
        }
        bridging_.erase(bridging);
      }
      GiveToGrpc(grpc_end, id);
    });
  }
}

void GrpcPortListener::GiveToGrpc(int fd, ConnectionGate::Id id) {
  {
    // Counted before gRPC has it: its first call may prove the token at once.
    std::lock_guard<std::mutex> lock(mutex_);
    handed_[fd] = HandedOver{id, InodeOf(fd), SteadyMs()};
    fds_[id] = fd;
  }
  grpc::AddInsecureChannelFromFd(server_, fd);
}

void GrpcPortListener::Evict(const std::vector<ConnectionGate::Id>& ids) {
  for (ConnectionGate::Id id : ids) {
    auto fd = fds_.find(id);
    if (fd == fds_.end()) continue;
    auto handed = handed_.find(fd->second);
    auto bridging = bridging_.find(fd->second);
    if (bridging != bridging_.end() && bridging->second.id == id) {
      // The bridge owns it: its handshake fails and it closes.
      if (InodeOf(fd->second) == bridging->second.inode) shutdown(fd->second, SHUT_RDWR);
      bridging_.erase(bridging);
    } else if (handed != handed_.end() && handed->second.id == id) {
      // gRPC owns the descriptor: it sees the end of the stream and
      // closes it. Only if it is still the socket that was handed over.
      if (InodeOf(fd->second) == handed->second.inode) shutdown(fd->second, SHUT_RDWR);
      handed_.erase(handed);
    }
    fds_.erase(fd);
  }
}

void GrpcPortListener::Sweep(int64_t now) {
  // gRPC closes what it was handed without telling: a descriptor that no
  // longer is the socket handed over has gone. One that has not proven the
  // token in its time (no call with it, or none at all) is ended.
  int gone = 0;
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<ConnectionGate::Id> late;
  for (const auto& [fd, held] : handed_) {
    if (now - held.since_ms >= guard_.unproven_timeout_ms) late.push_back(held.id);
  }
  Evict(late);
  for (ConnectionGate::Id id : late) gate_.Closed(id);
  for (auto it = handed_.begin(); it != handed_.end();) {
    if (InodeOf(it->first) != it->second.inode) {
      gate_.Closed(it->second.id);
      fds_.erase(it->second.id);
      it = handed_.erase(it);
      ++gone;
    } else {
      ++it;
    }
  }
  for (auto it = bridging_.begin(); it != bridging_.end();) {
    if (InodeOf(it->first) != it->second.inode) {  // its handshake failed
      gate_.Closed(it->second.id);
      fds_.erase(it->second.id);
      it = bridging_.erase(it);
      ++gone;
    } else {
      ++it;
    }
  }
  // A flood's buffers were freed into glibc's arenas; give them back, so
  // the head's memory is what it was once the flood ends.
  if (gone >= 64) malloc_trim(0);
}

void GrpcPortListener::PeerProvedToken(const std::string& peer) {
  // gRPC names a connection it was handed by its descriptor: "fd:N".
  if (peer.rfind("fd:", 0) != 0) return;
  int fd = std::atoi(peer.c_str() + 3);
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = handed_.find(fd);
  if (found == handed_.end()) return;
  gate_.Proven(found->second.id);
  fds_.erase(found->second.id);
  handed_.erase(found);
}

int GrpcPortListener::unproven() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return gate_.unproven();
}

int64_t GrpcPortListener::evicted() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return gate_.evicted();
}

int64_t GrpcPortListener::shed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return shed_;
}

namespace {

std::mutex observers_mutex;
std::vector<GrpcPortListener*>* observers = new std::vector<GrpcPortListener*>;

void TellObservers(const std::string& peer) {
  std::lock_guard<std::mutex> lock(observers_mutex);
  for (GrpcPortListener* listener : *observers) listener->PeerProvedToken(peer);
}

}  // namespace

void AddTokenObserver(GrpcPortListener* listener) {
  std::lock_guard<std::mutex> lock(observers_mutex);
  observers->push_back(listener);
  SetTokenProvedHook(&TellObservers);
}

void RemoveTokenObserver(GrpcPortListener* listener) {
  std::lock_guard<std::mutex> lock(observers_mutex);
  observers->erase(std::remove(observers->begin(), observers->end(), listener), observers->end());
}

}  // namespace clusterd
