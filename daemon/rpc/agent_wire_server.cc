#include "daemon/rpc/agent_wire_server.h"

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <future>

#include <fmt/format.h>

#include "common/logging.h"
#include "common/net/net_address.h"
#include "common/threads.h"

namespace clusterd {

namespace asio = boost::asio;
using boost::system::error_code;
using tcp = asio::ip::tcp;

AgentWireServer::AgentWireServer(HeadCore* core, EventLoop* loop, const PortGuard& guard)
    : acceptor_(io_), accept_retry_(io_), reserve_(guard.reserve_descriptors), gate_(guard.gate) {
  context_.hello_deadline_ms = guard.unproven_timeout_ms;
  context_.core = core;
  context_.loop = loop;
  context_.users = &core->users();
  context_.on_proven = [this](ConnectionGate::Id id) {
    gate_.Proven(id);
    closers_.erase(id);
  };
  context_.on_ended = [this](ConnectionGate::Id id) {
    gate_.Closed(id);
    closers_.erase(id);
  };
}

AgentWireServer::~AgentWireServer() { Stop(); }

Status AgentWireServer::Start(const std::string& ip, int port, const TlsConfig& tls) {
  if (tls.on()) {
    ASSIGN_OR_RETURN(tls_, ServerTlsContext(tls));
  }
  // 0.0.0.0 listens on [::] too where the machine has IPv6, as gRPC and the
  // heartbeat datagrams do.
  auto bound = BindTcp(ip, port);
  if (!bound.ok()) {
    return Status::Unavailable(fmt::format("cannot listen for node agents: {} (--agent-port)", bound.status().message()));
  }
  sockaddr_storage local{};
  socklen_t length = sizeof local;
  getsockname(*bound, reinterpret_cast<sockaddr*>(&local), &length);
  error_code ec;
  acceptor_.assign(local.ss_family == AF_INET6 ? tcp::v6() : tcp::v4(), *bound, ec);
  if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    if (!acceptor_.is_open()) close(*bound);
    return Status::Unavailable(fmt::format("cannot listen for node agents on {}:{}: {} (--agent-port)", ip, port,
                                           ec.message()));
  }
  port_ = acceptor_.local_endpoint().port();
  Accept();
  thread_ = std::thread([this] {
    CountedThread counted("agent-port");
    auto work = asio::make_work_guard(io_);  // until Stop
    io_.run();
  });
  return Status::Ok();
}

void AgentWireServer::Accept() {
  acceptor_.async_accept([this](const error_code& ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;
    if (ec && OutOfDescriptors(ec.value())) {
      // The backlog would stay full and every agent time out: take what
      // waits off it with the reserve, and go on at once.
      int shed = reserve_.Shed(acceptor_.native_handle());
      LogRefusedStream("(the backlog)", fmt::format("out of file descriptors; closed {} waiting connection(s)", shed));
      Accept();
      return;
    }
    if (ec) {
      // Anything else the kernel says (no buffers, say): the listener
      // stays, and tries again a little later rather than at once and for ever.
      LOG_WARN("agent port: accept failed: {}; trying again in 100 ms", ec.message());
      accept_retry_.expires_after(std::chrono::milliseconds(100));
      accept_retry_.async_wait([this](const error_code& waited) {
        if (!waited) Accept();
      });
      return;
    }
    reserve_.Refill();
    error_code ignored;
    const ConnectionGate::Id id = Admit(socket.remote_endpoint(ignored));
    if (tls_) {
      Handshake(std::move(socket), id);
    } else {
      Adopt(std::make_shared<FrameChannel>(std::move(socket)), id);
    }
    Accept();
  });
}

ConnectionGate::Id AgentWireServer::Admit(const tcp::endpoint& peer) {
  asio::ip::address address = peer.address();
  if (address.is_v6() && address.to_v6().is_v4_mapped()) {
    address = asio::ip::make_address_v4(asio::ip::v4_mapped, address.to_v6());
  }
  std::vector<ConnectionGate::Id> evict;
  const ConnectionGate::Id id = gate_.Admit(address.to_string(), &evict);
  for (ConnectionGate::Id old : evict) {
    auto closer = closers_.find(old);
    if (closer == closers_.end()) continue;
    std::function<void()> close = std::move(closer->second);
    closers_.erase(closer);
    close();
  }
  return id;
}

void AgentWireServer::Handshake(tcp::socket socket, ConnectionGate::Id id) {
  error_code ignored;
  const tcp::endpoint peer = socket.remote_endpoint(ignored);
  auto made = TlsSocket::Make(std::move(socket), *tls_, /*server=*/true);
  if (!made.ok()) {
    gate_.Closed(id);
    LogRefusedStream(peer.address().to_string(), made.status().message());
    return;
  }
  std::shared_ptr<TlsSocket> stream = *made;
  closers_[id] = [weak = std::weak_ptr<TlsSocket>(stream)] {
    if (auto open = weak.lock()) {
      error_code closing;
      open->next_layer().close(closing);
    }
  };
  // The handshake has the hello's deadline too: a stranger that connects
  // and stalls holds nothing for long.
  auto deadline = std::make_shared<asio::steady_timer>(io_, std::chrono::milliseconds(context_.hello_deadline_ms));
  deadline->async_wait([stream](const error_code& ec) {
    if (ec) return;
    error_code closing;
    stream->next_layer().close(closing);
  });
  stream->AsyncHandshake([this, stream, deadline, peer, id](const error_code& ec) {
    deadline->cancel();
    if (ec) {
      gate_.Closed(id);
      closers_.erase(id);
      LogRefusedStream(peer.address().to_string(), "TLS handshake failed: " + ec.message());
      return;
    }
    if (closers_.count(id) == 0) return;  // evicted meanwhile
    Adopt(std::make_shared<FrameChannel>(stream), id);
  });
}

void AgentWireServer::Adopt(std::shared_ptr<FrameChannel> channel, ConnectionGate::Id id) {
  closers_[id] = [weak = std::weak_ptr<FrameChannel>(channel)] {
    if (auto open = weak.lock()) open->Close("too many connections from its address have not said hello");
  };
  if (channels_.size() >= prune_at_) {
    channels_.erase(std::remove_if(channels_.begin(), channels_.end(), [](const auto& c) { return c.expired(); }),
                    channels_.end());
    prune_at_ = std::max<size_t>(64, channels_.size() * 2);
  }
  channels_.push_back(channel);
  std::make_shared<WireConnection>(std::move(channel), &context_, id)->Start();
}

void AgentWireServer::Stop() {
  if (!thread_.joinable()) return;
  std::promise<void> closed;
  asio::post(io_, [this, &closed] {
    error_code ignored;
    acceptor_.close(ignored);
    accept_retry_.cancel();
    for (const auto& weak : channels_) {
      if (auto channel = weak.lock()) channel->Close("the head is stopping");
    }
    closed.set_value();
  });
  closed.get_future().wait();
  // The closes run before the io thread's queue empties; then nothing is left.
  asio::post(io_, [this] { io_.stop(); });
  thread_.join();
}

}  // namespace clusterd
