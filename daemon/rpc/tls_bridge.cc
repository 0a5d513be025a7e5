#include "daemon/rpc/tls_bridge.h"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>

#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <vector>
#include <cstring>

#include "common/net/frame_channel.h"
#include "common/logging.h"
#include "common/threads.h"

namespace clusterd {

namespace asio = boost::asio;
using boost::system::error_code;
using tcp = asio::ip::tcp;
using local = asio::local::stream_protocol;

namespace {

// gRPC's clients insist on HTTP/2 named by ALPN.
int SelectH2(SSL*, const unsigned char** out, unsigned char* out_length, const unsigned char* in,
             unsigned int in_length, void*) {
  static const unsigned char kH2[] = {2, 'h', '2'};
  unsigned char* chosen = nullptr;
  if (SSL_select_next_proto(&chosen, out_length, kH2, sizeof kH2, in, in_length) != OPENSSL_NPN_NEGOTIATED) {
    return SSL_TLSEXT_ERR_ALERT_FATAL;
  }
  *out = chosen;
  return SSL_TLSEXT_ERR_OK;
}

constexpr size_t kRelayBytes = 64 * 1024;

// One connection's two sides and their buffers, kept alive by its handlers.
class Relay : public std::enable_shared_from_this<Relay> {
 public:
  Relay(asio::io_context& io, tcp::socket socket, asio::ssl::context& context)
      : tls_(std::move(socket), context), grpc_(io), deadline_(io) {}

  void Handshake(int timeout_ms, TlsBridge::HandOver hand_over) {
    auto self = shared_from_this();
    deadline_.expires_after(std::chrono::milliseconds(timeout_ms));
    deadline_.async_wait([self](const error_code& ec) {
      if (!ec) self->End();
    });
    tls_.async_handshake(asio::ssl::stream_base::server, [self, hand_over](const error_code& ec) {
      self->deadline_.cancel();
      if (ec) return self->End();
      int pair[2];
      if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, pair) != 0) {
        LOG_WARN("gRPC port: socketpair for a TLS connection failed: {}", std::strerror(errno));
        return self->End();
      }
      error_code assigned;
      self->grpc_.assign(local(), pair[0], assigned);
      if (assigned) {
        close(pair[0]);
        close(pair[1]);
        return self->End();
      }
      self->from_client_.resize(kRelayBytes);
      self->from_grpc_.resize(kRelayBytes);
      hand_over(pair[1]);
      self->FromClient();
      self->FromGrpc();
    });
  }

 private:
  void FromClient() { Pump(tls_, grpc_, from_client_, &Relay::FromClient); }
  void FromGrpc() { Pump(grpc_, tls_, from_grpc_, &Relay::FromGrpc); }

  // Reads what `from` has into `buffer`, writes all of it to `to`, then
  // goes on with `next`; either side's error ends the relay.
  template <typename From, typename To>
  void Pump(From& from, To& to, std::vector<char>& buffer, void (Relay::*next)()) {
    auto self = shared_from_this();
    from.async_read_some(asio::buffer(buffer), [self, &to, &buffer, next](const error_code& ec, size_t got) {
      if (ec) return self->End();
      asio::async_write(to, asio::buffer(buffer.data(), got), [self, next](const error_code& written, size_t) {
        if (written) return self->End();
        ((*self).*next)();
      });
    });
  }

  // Either side's end ends both: gRPC sees its end close, the client its
  // TCP connection (no TLS close_notify: the peer is gone or going).
  void End() {
    error_code ignored;
    deadline_.cancel();
    tls_.next_layer().shutdown(tcp::socket::shutdown_both, ignored);
    tls_.next_layer().close(ignored);
    if (grpc_.is_open()) {
      grpc_.shutdown(local::socket::shutdown_both, ignored);
      grpc_.close(ignored);
    }
  }

  asio::ssl::stream<tcp::socket> tls_;
  local::socket grpc_;
  asio::steady_timer deadline_;
  // Sized once the handshake is done: a stranger's connection costs no buffers.
  std::vector<char> from_client_, from_grpc_;
};

}  // namespace

Result<std::unique_ptr<TlsBridge>> TlsBridge::Start(const TlsConfig& tls, int handshake_timeout_ms) {
  ASSIGN_OR_RETURN(std::shared_ptr<asio::ssl::context> context, ServerTlsContext(tls));
  SSL_CTX_set_alpn_select_cb(context->native_handle(), &SelectH2, nullptr);
  return std::unique_ptr<TlsBridge>(new TlsBridge(std::move(context), handshake_timeout_ms));
}

TlsBridge::TlsBridge(std::shared_ptr<asio::ssl::context> context, int handshake_timeout_ms)
    : context_(std::move(context)), handshake_timeout_ms_(handshake_timeout_ms), work_(asio::make_work_guard(io_)) {
  thread_ = std::thread([this] {
    CountedThread counted("grpc-tls");
    io_.run();
  });
}

TlsBridge::~TlsBridge() {
  work_.reset();
  io_.stop();
  thread_.join();
}

void TlsBridge::Bridge(int fd, HandOver hand_over) {
  asio::post(io_, [this, fd, hand_over = std::move(hand_over)] {
    sockaddr_storage local_address{};
    socklen_t length = sizeof local_address;
    getsockname(fd, reinterpret_cast<sockaddr*>(&local_address), &length);
    tcp::socket socket(io_);
    error_code assigned;
    socket.assign(local_address.ss_family == AF_INET6 ? tcp::v6() : tcp::v4(), fd, assigned);
    if (assigned) {
      close(fd);
      return;
    }
    std::make_shared<Relay>(io_, std::move(socket), *context_)->Handshake(handshake_timeout_ms_, hand_over);
  });
}

}  // namespace clusterd
