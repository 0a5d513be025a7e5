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
#include <mutex>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "common/clock.h"
#include "common/head_metadata.h"
#include "common/logging.h"
#include "common/thread_name.h"

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
  Connection(tcp::socket socket, const Handler* handler, const Limits& limits, std::shared_ptr<Shared> shared)
      : live_(std::move(shared)), stream_(std::move(socket)), handler_(handler), limits_(limits) {}

  void ReadRequest() {
    waiting_since_ = std::chrono::steady_clock::now();
    waiting_ = true;
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(limits_.max_header_bytes));
    parser_->body_limit(limits_.max_body_bytes);
    // One deadline for the whole request: a client sending a byte at a
    // time gets no more time than one sending nothing.
    stream_.expires_after(limits_.deadline);
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code error, size_t) { self->OnRead(error); });
  }

  // Waiting for a request (none read yet, or between two on a kept
  // connection) since when; on the server's thread.
  bool waiting() const { return waiting_; }
  std::chrono::steady_clock::time_point waiting_since() const { return waiting_since_; }

  void Close() {
    waiting_ = false;
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.close();
  }

 private:
  void OnRead(beast::error_code error) {
    waiting_ = false;
    if (error == http::error::header_limit) {
      keep_alive_ = false;
      return Write({431, "application/json", R"({"error":"request headers too large"})"});
    }
    if (error) return Close();  // timed out, hung up, malformed, or closed by Stop()
    stream_.expires_never();    // the handler may take a moment; the write has its own deadline
    const auto& request = parser_->get();
    keep_alive_ = request.keep_alive();
    version_ = request.version();
    // HEAD is GET without the body (HTTP requires it wherever GET works).
    head_ = request.method() == http::verb::head;
    HttpRequest given{head_ ? std::string("GET") : std::string(request.method_string()), std::string(request.target()),
                      std::string(request[http::field::authorization]), std::string(request[http::field::cookie])};
    auto self = shared_from_this();
    (*handler_)(given, [self](HttpReply reply) {
      boost::asio::post(self->stream_.get_executor(),
                        [self, reply = std::move(reply)]() mutable { self->Write(std::move(reply)); });
    });
  }

  void Write(HttpReply reply) {
    response_ = {};
    response_.result(static_cast<http::status>(reply.status));
    response_.version(version_);
    response_.set(http::field::content_type, reply.content_type);
    response_.set(http::field::cache_control, "no-store");
    // The dashboard measures "how long ago" against the head's clock, not
    // the browser machine's (common/head_metadata.h says why).
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
  std::optional<http::request_parser<http::string_body>> parser_;
  http::response<http::string_body> response_;
  bool keep_alive_ = false;
  bool head_ = false;  // the request being answered is a HEAD
  bool waiting_ = false;
  std::chrono::steady_clock::time_point waiting_since_;
  unsigned version_ = 11;
  const Handler* handler_;
  Limits limits_;
};

namespace {

void Accept(tcp::acceptor* acceptor, boost::asio::steady_timer* retry, const HttpServer::Handler* handler,
            const HttpServer::Limits* limits, std::shared_ptr<HttpServer::Shared> shared) {
  acceptor->async_accept([=](beast::error_code error, tcp::socket socket) {
    if (error == boost::asio::error::operation_aborted || !acceptor->is_open()) return;
    if (error) {
      // Out of file descriptors, say: try again shortly rather than spin.
      LOG_WARN("dashboard: accept failed: {}", error.message());
      retry->expires_after(std::chrono::milliseconds(100));
      retry->async_wait([=](beast::error_code waited) {
        if (!waited) Accept(acceptor, retry, handler, limits, shared);
      });
      return;
    }
    auto& open = shared->open;
    open.erase(std::remove_if(open.begin(), open.end(), [](const auto& weak) { return weak.expired(); }), open.end());
    // Full: the connection that has waited longest for a request makes room.
    // Found by exploratory testing: 64 connections that never sent a byte,
    // each opened again as soon as it timed out, kept every client (and
    // Prometheus) out; now a stranger must outpace every real request.
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
      auto connection = std::make_shared<HttpServer::Connection>(std::move(socket), handler, *limits, shared);
      open.push_back(connection);
      connection->ReadRequest();
    }
    Accept(acceptor, retry, handler, limits, shared);
  });
}

}  // namespace

HttpServer::HttpServer(Handler handler, Limits limits)
    : handler_(std::move(handler)), limits_(limits), io_(std::make_unique<Io>()), shared_(std::make_shared<Shared>()) {}

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
  Accept(&io_->acceptor, &io_->retry, &handler_, &limits_, shared_);
  thread_ = std::thread([this] {
    NameThisThread("http");
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
