#include "common/net/frame_channel.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/ssl.h>
#include <sys/socket.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <algorithm>
#include <future>

#include <fmt/format.h>

namespace clusterd {

namespace asio = boost::asio;
using boost::system::error_code;
using tcp = asio::ip::tcp;

namespace {

// After CloseAfterSends, how long the peer has to read the last frame and
// close its side before the connection is closed anyway. Fixed: a peer
// that reads at all reads within milliseconds; this only bounds one that
// does not.
constexpr int kLingerMs = 3000;
// A write buffer kept between writes up to this size; larger ones are freed
// (10,000 idle connections must not each hold their biggest burst).
constexpr size_t kKeptWriteBuffer = 16 << 10;

std::string PeerName(const tcp::socket& socket) {
  error_code ec;
  tcp::endpoint endpoint = socket.remote_endpoint(ec);
  if (ec) return "unknown";
  asio::ip::address address = endpoint.address();
  // A listener on [::] sees IPv4 peers as ::ffff:a.b.c.d; gRPC named them as IPv4.
  if (address.is_v6() && address.to_v6().is_v4_mapped()) {
    address = asio::ip::make_address_v4(asio::ip::v4_mapped, address.to_v6());
  }
  if (address.is_v4()) return fmt::format("ipv4:{}:{}", address.to_string(), endpoint.port());
  return fmt::format("ipv6:[{}]:{}", address.to_string(), endpoint.port());
}

// TCP keepalive as the stream's backstop for a peer that vanished without
// a word (a machine powered off mid-registration): ~60 s, as gRPC's 30 s
// pings and their timeout were. A registered agent notices a silent head
// sooner by its own asks (head_liveness.h), the head a silent agent by its
// node timeout.
void TuneSocket(tcp::socket& socket) {
  error_code ignored;
  socket.set_option(tcp::no_delay(true), ignored);
  socket.set_option(asio::socket_base::keep_alive(true), ignored);
  const int fd = socket.native_handle();
  const int idle_s = 30, interval_s = 10, count = 3;
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle_s, sizeof idle_s);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval_s, sizeof interval_s);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count);
}

std::string Describe(const error_code& ec) {
  if (ec == asio::error::eof) return kPeerClosedConnection;
  if (ec == asio::ssl::error::stream_truncated) return kPeerClosedConnection;
  if (ec == asio::error::operation_aborted) return "closed";
  return ec.message();
}

}  // namespace

std::string EncodeFrame(const google::protobuf::MessageLite& message) {
  const size_t size = message.ByteSizeLong();
  std::string frame(kFrameHeaderBytes + size, '\0');
  frame[0] = static_cast<char>((size >> 24) & 0xff);
  frame[1] = static_cast<char>((size >> 16) & 0xff);
  frame[2] = static_cast<char>((size >> 8) & 0xff);
  frame[3] = static_cast<char>(size & 0xff);
  message.SerializeWithCachedSizesToArray(reinterpret_cast<uint8_t*>(&frame[kFrameHeaderBytes]));
  return frame;
}

FrameChannel::FrameChannel(Socket socket) : plain_(std::move(socket)) {
  TuneSocket(*plain_);
  peer_ = PeerName(*plain_);
}

FrameChannel::FrameChannel(std::shared_ptr<TlsSocket> socket) : tls_(std::move(socket)) {
  TuneSocket(tls_->next_layer());
  peer_ = PeerName(tls_->next_layer());
}

FrameChannel::Socket& FrameChannel::lowest() { return tls_ ? tls_->next_layer() : *plain_; }

void FrameChannel::Start(Handlers handlers, uint32_t max_frame_bytes) {
  handlers_ = std::move(handlers);
  max_frame_bytes_ = max_frame_bytes;
  asio::post(lowest().get_executor(), [self = shared_from_this()] { self->ReadHeader(); });
}

void FrameChannel::ReadHeader() {
  if (closed()) return;
  reading_ = true;
  auto on_header = [self = shared_from_this()](const error_code& ec, size_t) {
    if (ec) return self->CloseNow(Describe(ec));
    const unsigned char* h = self->header_;
    const uint32_t length = (uint32_t{h[0]} << 24) | (uint32_t{h[1]} << 16) | (uint32_t{h[2]} << 8) | h[3];
    if (length > self->max_frame_bytes_) {
      return self->CloseNow(
          fmt::format("a frame of {} bytes, over the limit of {} bytes", length, self->max_frame_bytes_));
    }
    self->ReadBody(length);
  };
  if (tls_) {
    tls_->AsyncReadExactly(reinterpret_cast<char*>(header_), sizeof header_,
                           [on_header = std::move(on_header)](const error_code& ec) { on_header(ec, 0); });
  } else {
    asio::async_read(*plain_, asio::buffer(header_), std::move(on_header));
  }
}

void FrameChannel::ReadBody(uint32_t length) {
  body_.assign(length, '\0');
  auto on_body = [self = shared_from_this()](const error_code& ec, size_t) {
    if (ec) return self->CloseNow(Describe(ec));
    std::string body;
    body.swap(self->body_);
    bool closing;
    {
      std::lock_guard<std::mutex> lock(self->mutex_);
      closing = self->closing_ || self->closed_;
    }
    if (closing) return self->ReadHeader();  // draining toward the peer's close
    if (self->handlers_.on_frame && self->handlers_.on_frame(std::move(body))) {
      self->ReadHeader();
    } else {
      self->reading_ = false;
    }
  };
  if (tls_) {
    tls_->AsyncReadExactly(&body_[0], length, [on_body = std::move(on_body)](const error_code& ec) { on_body(ec, 0); });
  } else {
    asio::async_read(*plain_, asio::buffer(&body_[0], length), std::move(on_body));
  }
}

void FrameChannel::Send(std::string frame) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (closed_ || closing_) return;
  if (!writing_ && plain_) {
    // Nothing is queued or being written: the frame goes from this thread,
    // without waking the io thread for it (a thread hop and two context
    // switches a message, a large part of a 1-rank job's cost at 1,000
    // jobs/s: docs/BENCHMARKS.md, jobs). This thread is the channel's writer
    // until it is done (writing_), and writes with the mutex released, so
    // that no caller waits on the kernel for it; CloseNow leaves the socket
    // open meanwhile (sending_here_). What the kernel does not take now, or
    // an error, is left to the io thread's write.
    writing_ = true;
    sending_here_ = true;
    lock.unlock();
    const ssize_t sent = ::send(plain_->native_handle(), frame.data(), frame.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    lock.lock();
    sending_here_ = false;
    if (closed_) {
      // CloseNow came meanwhile and only shut the socket down: close it on the io thread.
      writing_ = false;
      asio::post(lowest().get_executor(), [self = shared_from_this()] {
        error_code ignored;
        self->lowest().close(ignored);
      });
      return;
    }
    if (sent == static_cast<ssize_t>(frame.size())) frame.clear();
    if (sent > 0) frame.erase(0, std::min(frame.size(), static_cast<size_t>(sent)));
    // Frames other threads queued meanwhile go after what is left of this one.
    if (!frame.empty()) queued_.insert(0, frame);
    if (queued_.empty() && !closing_) {
      writing_ = false;
      return;
    }
    asio::post(lowest().get_executor(), [self = shared_from_this()] { self->WriteQueued(); });
    return;
  }
  if (queued_.empty()) {
    queued_ = std::move(frame);
  } else {
    queued_ += frame;
  }
  if (writing_) return;
  writing_ = true;
  asio::post(lowest().get_executor(), [self = shared_from_this()] { self->WriteQueued(); });
}

void FrameChannel::WriteQueued() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (closed_) {
      writing_ = false;
      return;
    }
    if (queued_.empty()) {
      writing_ = false;
      if (!closing_) return;
    } else {
      in_flight_.swap(queued_);
      queued_.clear();
    }
  }
  if (in_flight_.empty()) return Shutdown();  // closing, and all is out
  auto on_written = [self = shared_from_this()](const error_code& ec, size_t) {
    size_t queued;
    {
      std::lock_guard<std::mutex> lock(self->mutex_);
      if (self->in_flight_.capacity() > kKeptWriteBuffer) {
        std::string().swap(self->in_flight_);
      } else {
        self->in_flight_.clear();
      }
      queued = self->queued_.size();
    }
    if (ec) return self->CloseNow(Describe(ec));
    if (self->handlers_.on_written) self->handlers_.on_written(queued);
    self->WriteQueued();
  };
  if (tls_) {
    tls_->AsyncWriteAll(in_flight_.data(), in_flight_.size(),
                        [on_written = std::move(on_written)](const error_code& ec) { on_written(ec, 0); });
  } else {
    asio::async_write(*plain_, asio::buffer(in_flight_), std::move(on_written));
  }
}

void FrameChannel::CloseAfterSends() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (closed_ || closing_) return;
  closing_ = true;
  if (writing_) return;  // WriteQueued shuts down once the queue is out
  writing_ = true;
  asio::post(lowest().get_executor(), [self = shared_from_this()] { self->WriteQueued(); });
}

void FrameChannel::Shutdown() {
  // A peer that acknowledges nothing of the last frames and the FIN for a
  // second is unreachable (its machine is off, its cable pulled): the
  // kernel gives up on it then (ETIMEDOUT ends the read below), not after
  // the whole linger, which is for a peer that is there but slow to read.
  const int unacknowledged_ms = 1000;
  setsockopt(lowest().native_handle(), IPPROTO_TCP, TCP_USER_TIMEOUT, &unacknowledged_ms, sizeof unacknowledged_ms);
  // A FIN (no TLS close_notify: the peer reads the last frame, then the
  // end); closing at once could reset the connection and lose that frame
  // with the peer's unread bytes.
  error_code ignored;
  lowest().shutdown(tcp::socket::shutdown_send, ignored);
  linger_ = std::make_unique<asio::steady_timer>(lowest().get_executor(), std::chrono::milliseconds(kLingerMs));
  linger_->async_wait([self = shared_from_this()](const error_code& ec) {
    if (!ec) self->CloseNow("closed");
  });
  if (!reading_) ReadHeader();
}

void FrameChannel::Close(std::string why) {
  asio::post(lowest().get_executor(), [self = shared_from_this(), why = std::move(why)] { self->CloseNow(why); });
}

void FrameChannel::CloseNow(const std::string& why) {
  bool sending_elsewhere;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (closed_) return;
    closed_ = true;
    std::string().swap(queued_);
    sending_elsewhere = sending_here_;
  }
  reading_ = false;
  error_code ignored;
  if (sending_elsewhere) {
    // Another thread is inside send() on this socket: its descriptor must
    // stay this socket's until that returns (Send closes it then). Shutting
    // it down ends the io thread's reads and writes on it now.
    lowest().cancel(ignored);
    lowest().shutdown(tcp::socket::shutdown_both, ignored);
  } else {
    lowest().close(ignored);
  }
  if (linger_) linger_->cancel();
  // Handlers may hold their owner, which may hold this channel: let go.
  Handlers handlers = std::move(handlers_);
  handlers_ = Handlers{};
  if (handlers.on_closed) handlers.on_closed(why);
}

size_t FrameChannel::queued_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return queued_.size() + in_flight_.size();
}

bool FrameChannel::closed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return closed_;
}

int64_t FrameChannel::MillisSincePeerAcked() const {
  // Under the lock: CloseNow marks the channel closed under it before it
  // closes the descriptor, so the one read here is still this socket's.
  std::lock_guard<std::mutex> lock(mutex_);
  if (closed_) return -1;
  const int fd = const_cast<FrameChannel*>(this)->lowest().native_handle();
  tcp_info info{};
  socklen_t length = sizeof info;
  if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &length) != 0) return -1;
  return info.tcpi_last_ack_recv;
}

Result<std::shared_ptr<asio::ssl::context>> ServerTlsContext(const TlsConfig& tls) {
  try {
    auto context = std::make_shared<asio::ssl::context>(asio::ssl::context::tls_server);
    context->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                         asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                         asio::ssl::context::no_tlsv1_1);
    context->use_certificate_chain(asio::buffer(tls.cert_pem));
    context->use_private_key(asio::buffer(tls.key_pem), asio::ssl::context::pem);
    return context;
  } catch (const boost::system::system_error& error) {
    return Status::InvalidArgument(
        fmt::format("--tls-cert {} / --tls-key {}: {}", tls.cert_path, tls.key_path, error.what()));
  }
}

Result<std::shared_ptr<asio::ssl::context>> ClientTlsContext(const TlsConfig& tls) {
  try {
    auto context = std::make_shared<asio::ssl::context>(asio::ssl::context::tls_client);
    context->set_options(asio::ssl::context::no_sslv2 | asio::ssl::context::no_sslv3 |
                         asio::ssl::context::no_tlsv1 | asio::ssl::context::no_tlsv1_1);
    context->add_certificate_authority(asio::buffer(tls.ca_pem));
    context->set_verify_mode(asio::ssl::verify_peer);
    return context;
  } catch (const boost::system::system_error& error) {
    return Status::InvalidArgument(fmt::format("--tls-ca {}: {}", tls.ca_path, error.what()));
  }
}

namespace {

// One dial's sockets, timer and answer, shared by its handlers on the io thread.
struct Dial {
  Dial(asio::io_context* io, int timeout_ms) : socket(*io), timer(*io, std::chrono::milliseconds(timeout_ms)) {}
  tcp::socket socket;
  std::shared_ptr<TlsSocket> tls;
  std::shared_ptr<asio::ssl::context> context;
  asio::steady_timer timer;
  bool timed_out = false;
  bool done = false;
  std::promise<Result<std::shared_ptr<FrameChannel>>> answer;

  void Finish(Result<std::shared_ptr<FrameChannel>> result) {
    if (done) return;
    done = true;
    timer.cancel();
    answer.set_value(std::move(result));
  }
  void Abort() {
    timed_out = true;
    error_code ignored;
    (tls ? tls->next_layer() : socket).close(ignored);
  }
};

}  // namespace

Result<std::shared_ptr<FrameChannel>> DialFrameChannel(asio::io_context* io, const std::string& host, int port,
                                                       const TlsConfig& tls, int timeout_ms) {
  const std::string where = fmt::format("{}:{}", host, port);
  tcp::resolver resolver(*io);
  error_code ec;
  tcp::resolver::results_type endpoints = resolver.resolve(host, std::to_string(port), ec);
  if (ec) return Status::Unavailable(fmt::format("cannot resolve {}: {}", host, ec.message()));
  auto dial = std::make_shared<Dial>(io, timeout_ms);
  if (tls.on()) {
    ASSIGN_OR_RETURN(dial->context, ClientTlsContext(tls));
  }
  const std::string name = tls.target_name_override.empty() ? host : tls.target_name_override;
  std::future<Result<std::shared_ptr<FrameChannel>>> answer = dial->answer.get_future();
  asio::post(*io, [dial, endpoints, name, where, timeout_ms] {
    dial->timer.async_wait([dial](const error_code& ec) {
      if (!ec && !dial->done) dial->Abort();
    });
    asio::async_connect(dial->socket, endpoints, [dial, name, where, timeout_ms](const error_code& ec,
                                                                                   const tcp::endpoint&) {
      if (dial->timed_out) {
        return dial->Finish(Status::Unavailable(fmt::format("no connection to {} within {} ms", where, timeout_ms)));
      }
      if (ec) return dial->Finish(Status::Unavailable(fmt::format("cannot connect to {}: {}", where, ec.message())));
      if (!dial->context) return dial->Finish(std::make_shared<FrameChannel>(std::move(dial->socket)));
      auto made = TlsSocket::Make(std::move(dial->socket), *dial->context, /*server=*/false, name);
      if (!made.ok()) return dial->Finish(made.status());
      dial->tls = *made;
      dial->tls->AsyncHandshake([dial, where, timeout_ms](const error_code& ec) {
        if (dial->timed_out) {
          return dial->Finish(
              Status::Unavailable(fmt::format("no TLS handshake with {} within {} ms", where, timeout_ms)));
        }
        if (ec) {
          return dial->Finish(Status::Unavailable(fmt::format("TLS handshake with {} failed: {}", where, ec.message())));
        }
        dial->Finish(std::make_shared<FrameChannel>(dial->tls));
      });
    });
  });
  return answer.get();
}

}  // namespace clusterd
