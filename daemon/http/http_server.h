// A small asynchronous HTTP/1.1 server (Boost.Beast on its own thread) for
// the head's dashboard. Many clients at once, none able to hold it: every
// request must arrive whole within a deadline, headers are bounded, and a
// connection beyond the limit closes the one that has waited longest for a
// request (or itself, when all are being answered). Stop() closes every
// connection and returns promptly, whatever the clients are doing.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
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
};

struct HttpReply {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  // More headers (Set-Cookie, Location), in order.
  std::vector<std::pair<std::string, std::string>> headers = {};
};

class HttpServer {
 public:
  // Answers the request it was given; call it once, from any thread.
  using Respond = std::function<void(HttpReply)>;
  // Called on the server's thread for each request; must not block (hand
  // slow work elsewhere and call respond from there). A HEAD request comes
  // as a GET, and its reply goes without its body.
  using Handler = std::function<void(const HttpRequest&, Respond)>;

  struct Limits {
    int max_connections = 64;                   // more close the idlest (http_server.h)
    size_t max_header_bytes = 8 * 1024;         // request line and headers
    size_t max_body_bytes = 1024;               // the dashboard takes GETs only
    std::chrono::milliseconds deadline{10000};  // to read a whole request, or write a reply
  };

  HttpServer(Handler handler, Limits limits);
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
  Limits limits_;
  std::unique_ptr<Io> io_;
  std::shared_ptr<Shared> shared_;
  std::thread thread_;
  bool stopped_ = false;
  int port_ = 0;
};

}  // namespace clusterd
