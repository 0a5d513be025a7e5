// TLS on a non-blocking Asio TCP socket, with OpenSSL reading and writing
// the socket itself; a call that would block waits for the socket
// (async_wait) and tries again. asio::ssl::stream keeps four 17 KiB
// buffers per connection for its whole life (~75 KiB a connection with
// OpenSSL's: 778 MiB for 10,000 agents); here OpenSSL holds its record
// buffers only while a record is in flight (SSL_MODE_RELEASE_BUFFERS).
// All calls on the socket's io thread, one read and one write at a time.
#pragma once

#include <openssl/ssl.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>

#include <functional>
#include <memory>
#include <string>

#include "common/status.h"

namespace clusterd {

class TlsSocket : public std::enable_shared_from_this<TlsSocket> {
 public:
  using Socket = boost::asio::ip::tcp::socket;
  using Handler = std::function<void(const boost::system::error_code&)>;

  // A TLS session over `socket` (connected), not yet handshaken. A client
  // verifies the peer's certificate names `verify_name` (an IP or a host).
  static Result<std::shared_ptr<TlsSocket>> Make(Socket socket, boost::asio::ssl::context& context, bool server,
                                                 const std::string& verify_name = "");
  ~TlsSocket();
  TlsSocket(const TlsSocket&) = delete;
  TlsSocket& operator=(const TlsSocket&) = delete;

  Socket& next_layer() { return socket_; }
  // Handshakes; the error's message is OpenSSL's ("certificate verify failed").
  void AsyncHandshake(Handler done);
  // Reads exactly `size` bytes into `data` (which must stay valid).
  void AsyncReadExactly(char* data, size_t size, Handler done);
  // Writes all `size` bytes of `data` (which must stay valid).
  void AsyncWriteAll(const char* data, size_t size, Handler done);

 private:
  TlsSocket(Socket socket, SSL* ssl) : socket_(std::move(socket)), ssl_(ssl) {}
  enum class Op { kHandshake, kRead, kWrite };
  // Runs `op` from `done_bytes` until it completes, fails, or must wait.
  void Run(Op op, char* data, size_t size, size_t done_bytes, Handler done);

  Socket socket_;
  SSL* ssl_;
};

}  // namespace clusterd
