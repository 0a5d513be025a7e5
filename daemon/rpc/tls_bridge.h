// TLS for the head's gRPC port when clusterd takes its connections
// (grpc_port_listener.h): gRPC 1.51 takes a connection from a descriptor
// only as plaintext, so a TLS connection is terminated here, with the
// head's certificate and ALPN's "h2" as gRPC's own TLS would, and its
// plaintext goes to gRPC over one end of a socket pair. gRPC's end is a
// connection like any other to the listener: counted until a call on it
// proves the token, closed by shutting it down.
// Thread-safe; one thread of its own runs every bridge's I/O.
#pragma once

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/context.hpp>

#include <functional>
#include <memory>
#include <thread>

#include "common/status.h"
#include "common/net/tls.h"

namespace clusterd {

class TlsBridge {
 public:
  // Told, on the bridge's thread, the descriptor of gRPC's end once the
  // handshake is done: the callee hands it to gRPC (and owns it).
  using HandOver = std::function<void(int grpc_end)>;

  static Result<std::unique_ptr<TlsBridge>> Start(const TlsConfig& tls, int handshake_timeout_ms);
  ~TlsBridge();  // ends every bridge and joins the thread
  TlsBridge(const TlsBridge&) = delete;
  TlsBridge& operator=(const TlsBridge&) = delete;

  // Takes `fd` (a connected TCP socket, which it owns from now on),
  // handshakes, then calls `hand_over` and relays until either side ends.
  // A failed or late handshake closes it, and `hand_over` is not called.
  void Bridge(int fd, HandOver hand_over);

 private:
  TlsBridge(std::shared_ptr<boost::asio::ssl::context> context, int handshake_timeout_ms);

  std::shared_ptr<boost::asio::ssl::context> context_;
  const int handshake_timeout_ms_;
  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
  std::thread thread_;
};

}  // namespace clusterd
