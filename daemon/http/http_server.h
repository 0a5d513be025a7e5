// A small asynchronous HTTP/1.1 server (Boost.Beast on its own thread) for
// the head's dashboard. Many clients at once, none able to hold it: every
// request must arrive whole within a deadline, headers are bounded, and a
// connection beyond the limit closes the one that has waited longest for a
// request (or itself, when all are being answered). Stop() closes every
// connection and returns promptly, whatever the clients are doing. A body
// is read whole up to a small limit, or, where the Streamer says so (an
// upload), streamed piece by piece into a sink under a per-piece deadline
// and a minimum rate.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/status.h"

namespace clusterd {

struct HttpRequest {
  std::string method;         // "GET", "POST", ...
  std::string target;         // path and query, as sent
  std::string authorization;  // the Authorization header, empty when absent
  std::string cookie;         // the Cookie header, empty when absent
  std::string body = {};      // whole (at most max_body_bytes); empty for a streamed one
  // The Content-Length the client declared; nullopt when it sent none
  // (no body, or a chunked one).
  std::optional<uint64_t> content_length = std::nullopt;
};

struct HttpReply {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  // More headers (Set-Cookie, Location), in order.
  std::vector<std::pair<std::string, std::string>> headers = {};
};

// Where a streamed request body goes (an upload too large to hold): its
// pieces in order, each taken before the next is read, so a slow taker
// slows the sender and memory stays at one piece per upload.
class HttpBodySink {
 public:
  virtual ~HttpBodySink() = default;  // without End: the upload is abandoned
  // Called once per piece, from any thread: nullopt to read on, or the
  // reply that ends the request (the rest of the body goes unread and the
  // connection closes after the reply).
  using Next = std::function<void(std::optional<HttpReply> refusal)>;
  // The next piece of the body (at most HttpServer::kPieceBytes).
  virtual void Write(std::string piece, Next next) = 0;
  // The whole body arrived; call respond once, from any thread.
  virtual void End(std::function<void(HttpReply)> respond) = 0;
};

// What to do with a request whose headers (only) have arrived: stream its
// body into `sink`, or answer `reply` at once without reading the body (a
// refusal: the connection closes after it). Neither: read the body whole,
// bounded by max_body_bytes, and call the Handler.
struct HttpStream {
  std::shared_ptr<HttpBodySink> sink = nullptr;
  std::optional<HttpReply> reply = std::nullopt;
};

class HttpServer {
 public:
  // Answers the request it was given; call it once, from any thread.
  using Respond = std::function<void(HttpReply)>;
  // Called on the server's thread for each request; must not block (hand
  // slow work elsewhere and call respond from there). A HEAD request comes
  // as a GET, and its reply goes without its body.
  using Handler = std::function<void(const HttpRequest&, Respond)>;
  // Called on the server's thread once a request's headers are read (its
  // body empty); must not block. Decides whether the body streams.
  using Streamer = std::function<HttpStream(const HttpRequest&)>;

  // Bytes handed to an HttpBodySink at a time, at most.
  static constexpr size_t kPieceBytes = 256 * 1024;

  struct Limits {
    int max_connections = 64;                   // more close the idlest (http_server.h)
    size_t max_header_bytes = 8 * 1024;         // request line and headers
    size_t max_body_bytes = 1 << 20;            // a body read whole (more: 413): a job spec (job_api.h)
    std::chrono::milliseconds deadline{10000};  // to read a whole request, or write a reply
    // A streamed body gets `deadline` for each piece, and in all `deadline`
    // plus its declared length at this rate: a trickling sender cannot
    // hold a connection for ever.
    uint64_t min_stream_bytes_per_s = 1 << 20;
  };

  HttpServer(Handler handler, Limits limits, Streamer streamer = nullptr);
  ~HttpServer();  // Stop()s

  // Binds ip:port (0: any free port) and starts serving on a thread of its own.
  Status Start(const std::string& ip, int port);
  // The port it listens on. REQUIRES: Start succeeded.
  int port() const { return port_; }
  // Stops accepting, closes every connection, joins the thread. Safe to call twice.
  void Stop();

  class Connection;  // one client's socket (http_server.cc)
  struct Shared;     // what connections share with the server

 private:
  struct Io;
  Handler handler_;
  Streamer streamer_;
  Limits limits_;
  std::unique_ptr<Io> io_;
  std::shared_ptr<Shared> shared_;
  std::thread thread_;
  bool stopped_ = false;
  int port_ = 0;
};

}  // namespace clusterd
