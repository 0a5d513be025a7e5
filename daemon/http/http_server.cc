#include "daemon/http/http_server.h"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <algorithm>
#include <condition_variable>
#include <limits>
#include <mutex>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "common/clock.h"
#include "daemon/http/json_reply.h"
#include "common/net/head_metadata.h"
#include "common/logging.h"
#include "common/threads.h"

namespace clusterd {

namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = boost::asio::ip::tcp;

// Counts live connections, so that Stop() can wait until no reply owed by
// another thread (the head's loop) still holds one.
struct HttpServer::Shared {
  std::mutex mutex;
  std::condition_variable none_live;
  int live = 0;
  bool closed = false;  // Stop() has closed the acceptor and every connection
  std::vector<std::weak_ptr<Connection>> open;  // the server's thread only
};

struct HttpServer::Io {
  boost::asio::io_context context;
  tcp::acceptor acceptor{context};
  boost::asio::steady_timer retry{context};  // after a failed accept (out of fds)
  // Keeps run() going when nothing is pending but a reply owed by another
  // thread (after Stop() closed the acceptor, say); Stop() ends it.
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work{context.get_executor()};
};

// Reads a request within the deadline, hands it to the handler, writes the
// reply, and reads the next one while the client keeps the connection.
class HttpServer::Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(tcp::socket socket, const Handler* handler, const Streamer* streamer, const Limits& limits,
             std::shared_ptr<Shared> shared)
      : live_(std::move(shared)), stream_(std::move(socket)), handler_(handler), streamer_(streamer), limits_(limits) {}

  void ReadRequest() {
    waiting_since_ = std::chrono::steady_clock::now();
    waiting_ = true;
    header_parser_.emplace();
    header_parser_->header_limit(static_cast<std::uint32_t>(limits_.max_header_bytes));
    // The body's limit depends on where the request goes: set once its
    // headers are read (OnHeader). Not boost::none: Boost 1.74 compares a
    // Content-Length with an empty optional as larger.
    header_parser_->body_limit(std::numeric_limits<std::uint64_t>::max());
    // One deadline for the whole request: a client sending a byte at a
    // time gets no more time than one sending nothing.
    stream_.expires_after(limits_.deadline);
    http::async_read_header(stream_, buffer_, *header_parser_,
                            [self = shared_from_this()](beast::error_code error, size_t) { self->OnHeader(error); });
  }

  // Waiting for a request (none read yet, or between two on a kept
  // connection) since when; on the server's thread.
  bool waiting() const { return waiting_; }
  std::chrono::steady_clock::time_point waiting_since() const { return waiting_since_; }

  void Close() {
    waiting_ = false;
    sink_.reset();  // an upload cut short is abandoned
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.close();
  }

 private:
  void OnHeader(beast::error_code error) {
    waiting_ = false;
    if (error == http::error::header_limit) {
      keep_alive_ = false;
      return Write(JsonError(431, "request headers too large"));
    }
    if (error) return Close();  // timed out, hung up, malformed, or closed by Stop()
    const auto& header = header_parser_->get();
    keep_alive_ = header.keep_alive();
    version_ = header.version();
    // HEAD is GET without the body (HTTP requires it wherever GET works).
    head_ = header.method() == http::verb::head;
    request_ = {head_ ? std::string("GET") : std::string(header.method_string()), std::string(header.target()),
                std::string(header[http::field::authorization]), std::string(header[http::field::cookie])};
    if (auto length = header_parser_->content_length()) request_.content_length = *length;
    if (*streamer_ && !header_parser_->is_done()) {
      HttpStream stream = (*streamer_)(request_);
      if (stream.reply) return Refuse(std::move(*stream.reply));
      if (stream.sink) return StartStream(std::move(stream.sink));
    }
    if (request_.content_length && *request_.content_length > limits_.max_body_bytes) {
      return Refuse(TooLarge());
    }
    body_parser_.emplace(std::move(*header_parser_));
    body_parser_->body_limit(limits_.max_body_bytes);  // a chunked body, as it arrives
    // Under the deadline the header's read started.
    http::async_read(stream_, buffer_, *body_parser_,
                     [self = shared_from_this()](beast::error_code error, size_t) { self->OnBody(error); });
  }

  HttpReply TooLarge() const {
    return JsonError(413, fmt::format("request body too large: at most {} bytes here", limits_.max_body_bytes));
  }

  // Answers without reading the body, then closes: what is left of the body
  // would be taken for the next request.
  void Refuse(HttpReply reply) {
    keep_alive_ = false;
    linger_ = true;
    Write(std::move(reply));
  }

  // After a refusal with the body unread: stop sending, and read what the
  // client still sends for a moment before closing. Closed at once, the
  // socket would answer the body's bytes with a reset, which can destroy
  // the reply before a client that sends its whole body first (Python's
  // http.client, curl) reads it.
  void Linger() {
    linger_ = false;
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.expires_after(std::chrono::seconds(2));
    lingered_ = 0;
    DrainSome();
  }

  void DrainSome() {
    if (piece_.size() < 64 * 1024) piece_.resize(64 * 1024);
    stream_.async_read_some(boost::asio::buffer(piece_), [self = shared_from_this()](beast::error_code error, size_t n) {
      self->lingered_ += n;
      if (error || self->lingered_ > kLingerBytes) return self->Close();
      self->DrainSome();
    });
  }

  void OnBody(beast::error_code error) {
    if (error == http::error::body_limit) return Refuse(TooLarge());
    if (error) return Close();
    stream_.expires_never();  // the handler may take a moment; the write has its own deadline
    request_.body = std::move(body_parser_->get().body());
    body_parser_.reset();
    auto self = shared_from_this();
    (*handler_)(request_, [self](HttpReply reply) { self->WriteFromAnyThread(std::move(reply)); });
  }

  void WriteFromAnyThread(HttpReply reply) {
    auto self = shared_from_this();
    boost::asio::post(stream_.get_executor(), [self, reply = std::move(reply)]() mutable { self->Write(std::move(reply)); });
  }

  void StartStream(std::shared_ptr<HttpBodySink> sink) {
    sink_ = std::move(sink);
    stream_parser_.emplace(std::move(*header_parser_));
    // The streamer judged the length; the store's writer takes no more than it.
    stream_parser_->body_limit(std::numeric_limits<std::uint64_t>::max());
    const uint64_t declared = request_.content_length.value_or(0);
    stream_ends_by_ = std::chrono::steady_clock::now() + limits_.deadline +
                      std::chrono::seconds(declared / std::max<uint64_t>(1, limits_.min_stream_bytes_per_s));
    const auto& header = stream_parser_->get();
    if (beast::iequals(header[http::field::expect], "100-continue")) {
      // curl waits for this before it sends a large body.
      auto go_on = std::make_shared<http::response<http::empty_body>>(http::status::continue_, version_);
      stream_.expires_after(limits_.deadline);
      return http::async_write(stream_, *go_on, [self = shared_from_this(), go_on](beast::error_code error, size_t) {
        if (error) return self->Close();
        self->ReadPiece();
      });
    }
    ReadPiece();
  }

  // Fills piece_ (up to kPieceBytes) from the body, then hands it over.
  void ReadPiece() {
    if (piece_.size() != kPieceBytes) piece_.resize(kPieceBytes);
    auto& body = stream_parser_->get().body();
    body.data = piece_.data() + filled_;
    body.size = piece_.size() - filled_;
    body.more = true;
    stream_.expires_at(std::min(std::chrono::steady_clock::now() + limits_.deadline, stream_ends_by_));
    http::async_read_some(stream_, buffer_, *stream_parser_,
                          [self = shared_from_this()](beast::error_code error, size_t) { self->OnPiece(error); });
  }

  void OnPiece(beast::error_code error) {
    if (error == http::error::need_buffer) error = {};  // the piece is full
    if (error) return Close();                            // timed out, hung up, malformed: abandoned
    filled_ = piece_.size() - stream_parser_->get().body().size;
    const bool done = stream_parser_->is_done();
    if (!done && filled_ < piece_.size()) return ReadPiece();
    std::string piece = std::move(piece_);
    piece.resize(filled_);
    piece_ = {};
    filled_ = 0;
    auto self = shared_from_this();
    auto next = [self, done](std::optional<HttpReply> refusal) {
      boost::asio::post(self->stream_.get_executor(), [self, done, refusal = std::move(refusal)]() mutable {
        if (!self->sink_) return;  // closed meanwhile
        if (refusal) {
          self->sink_.reset();
          if (!done) return self->Refuse(std::move(*refusal));
          return self->Write(std::move(*refusal));
        }
        if (!done) return self->ReadPiece();
        self->stream_.expires_never();
        self->stream_parser_.reset();
        auto sink = std::move(self->sink_);
        sink->End([self](HttpReply reply) { self->WriteFromAnyThread(std::move(reply)); });
      });
    };
    if (piece.empty()) return next(std::nullopt);
    sink_->Write(std::move(piece), std::move(next));
  }

  void Write(HttpReply reply) {
    response_ = {};
    response_.result(static_cast<http::status>(reply.status));
    response_.version(version_);
    response_.set(http::field::content_type, reply.content_type);
    response_.set(http::field::cache_control, "no-store");
    // The dashboard measures "how long ago" against the head's clock, not
    // the browser machine's (common/net/head_metadata.h says why).
    response_.set(kHeadUnixMsHeader, std::to_string(SystemClock().UnixMillis()));
    for (const auto& [name, value] : reply.headers) response_.insert(name, value);
    response_.keep_alive(keep_alive_);
    response_.body() = std::move(reply.body);
    response_.prepare_payload();
    if (head_) {
      const auto length = response_.body().size();
      response_.body().clear();
      response_.content_length(length);
    }
    stream_.expires_after(limits_.deadline);
    http::async_write(stream_, response_, [self = shared_from_this()](beast::error_code error, size_t) {
      if (!error && self->linger_) return self->Linger();
      if (error || !self->keep_alive_) return self->Close();
      self->ReadRequest();
    });
  }

  // Counts this connection as live until the very end: declared first, so
  // destroyed last, after the socket, which needs the server's context.
  struct Live {
    explicit Live(std::shared_ptr<Shared> shared) : shared(std::move(shared)) {
      std::lock_guard<std::mutex> lock(this->shared->mutex);
      ++this->shared->live;
    }
    ~Live() {
      std::lock_guard<std::mutex> lock(shared->mutex);
      if (--shared->live == 0) shared->none_live.notify_all();
    }
    std::shared_ptr<Shared> shared;
  };

  Live live_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  // A request's headers, then its body read whole, or streamed.
  std::optional<http::request_parser<http::empty_body>> header_parser_;
  std::optional<http::request_parser<http::string_body>> body_parser_;
  std::optional<http::request_parser<http::buffer_body>> stream_parser_;
  HttpRequest request_;
  std::shared_ptr<HttpBodySink> sink_;  // while a body streams
  std::string piece_;                   // the piece being filled
  size_t filled_ = 0;
  std::chrono::steady_clock::time_point stream_ends_by_;
  bool linger_ = false;  // the reply being written refuses a body left unread
  size_t lingered_ = 0;
  static constexpr size_t kLingerBytes = 8 << 20;
  http::response<http::string_body> response_;
  bool keep_alive_ = false;
  bool head_ = false;  // the request being answered is a HEAD
  bool waiting_ = false;
  std::chrono::steady_clock::time_point waiting_since_;
  unsigned version_ = 11;
  const Handler* handler_;
  const Streamer* streamer_;
  Limits limits_;
};

namespace {

void Accept(tcp::acceptor* acceptor, boost::asio::steady_timer* retry, const HttpServer::Handler* handler,
            const HttpServer::Streamer* streamer, const HttpServer::Limits* limits,
            std::shared_ptr<HttpServer::Shared> shared) {
  acceptor->async_accept([=](beast::error_code error, tcp::socket socket) {
    if (error == boost::asio::error::operation_aborted || !acceptor->is_open()) return;
    if (error) {
      // Out of file descriptors, say: try again shortly rather than spin.
      LOG_WARN("dashboard: accept failed: {}", error.message());
      retry->expires_after(std::chrono::milliseconds(100));
      retry->async_wait([=](beast::error_code waited) {
        if (!waited) Accept(acceptor, retry, handler, streamer, limits, shared);
      });
      return;
    }
    auto& open = shared->open;
    open.erase(std::remove_if(open.begin(), open.end(), [](const auto& weak) { return weak.expired(); }), open.end());
    // Full: the connection that has waited longest for a request makes room.
    // Else 64 connections that never send a byte, each opened again as soon
    // as it times out, keep every client (and Prometheus) out; this way a
    // stranger must outpace every real request.
    bool room = static_cast<int>(open.size()) < limits->max_connections;
    if (!room) {
      std::shared_ptr<HttpServer::Connection> idlest;
      for (const auto& weak : open) {
        auto connection = weak.lock();
        if (connection && connection->waiting() && (!idlest || connection->waiting_since() < idlest->waiting_since())) {
          idlest = connection;
        }
      }
      if (idlest) {
        idlest->Close();  // its slot is free once its read ends, at once
        room = true;
      }
    }
    if (!room) {
      beast::error_code ignored;
      socket.close(ignored);  // full of requests being answered: this client may try again
    } else {
      auto connection = std::make_shared<HttpServer::Connection>(std::move(socket), handler, streamer, *limits, shared);
      open.push_back(connection);
      connection->ReadRequest();
    }
    Accept(acceptor, retry, handler, streamer, limits, shared);
  });
}

}  // namespace

HttpServer::HttpServer(Handler handler, Limits limits, Streamer streamer)
    : handler_(std::move(handler)), streamer_(std::move(streamer)), limits_(limits), io_(std::make_unique<Io>()), shared_(std::make_shared<Shared>()) {}

HttpServer::~HttpServer() { Stop(); }

Status HttpServer::Start(const std::string& ip, int port) {
  beast::error_code error;
  auto address = boost::asio::ip::make_address(ip, error);
  auto failed = [&](const beast::error_code& why) {
    beast::error_code ignored;
    io_->acceptor.close(ignored);
    return Status::Unavailable(fmt::format("cannot listen on {}:{}: {}", ip, port, why.message()));
  };
  if (error) return failed(error);
  tcp::endpoint endpoint(address, static_cast<unsigned short>(port));
  io_->acceptor.open(endpoint.protocol(), error);
  if (!error) io_->acceptor.set_option(tcp::acceptor::reuse_address(true), error);
  if (!error) io_->acceptor.bind(endpoint, error);
  if (!error) io_->acceptor.listen(boost::asio::socket_base::max_listen_connections, error);
  if (error) return failed(error);
  port_ = io_->acceptor.local_endpoint().port();
  Accept(&io_->acceptor, &io_->retry, &handler_, &streamer_, &limits_, shared_);
  thread_ = std::thread([this] {
    CountedThread counted("http");
    io_->context.run();
  });
  return Status::Ok();
}

void HttpServer::Stop() {
  if (stopped_ || !io_) return;
  stopped_ = true;
  if (!thread_.joinable()) return;
  boost::asio::post(io_->context, [this] {
    beast::error_code ignored;
    io_->acceptor.close(ignored);
    io_->retry.cancel();
    for (auto& weak : shared_->open) {
      if (auto connection = weak.lock()) connection->Close();
    }
    std::lock_guard<std::mutex> lock(shared_->mutex);
    shared_->closed = true;
    shared_->none_live.notify_all();
  });
  // Closed connections end at once; one whose reply is still being made on
  // another thread ends when that reply arrives, which takes microseconds.
  bool all_gone;
  {
    std::unique_lock<std::mutex> lock(shared_->mutex);
    all_gone = shared_->none_live.wait_for(lock, std::chrono::seconds(2), [this] { return shared_->closed && shared_->live == 0; });
  }
  io_->context.stop();
  thread_.join();
  if (!all_gone) {
    // A reply still owed holds a connection whose socket belongs to this
    // context: leave the context be rather than free what it uses.
    LOG_WARN("dashboard: stopped with a reply still being made; leaving its connection behind");
    (void)io_.release();
  }
}

}  // namespace clusterd
