#include "common/net/tls_socket.h"

#include <openssl/err.h>
#include <openssl/x509v3.h>

#include <boost/asio/error.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ssl/error.hpp>

#include <cerrno>

#include <fmt/format.h>

namespace clusterd {

namespace asio = boost::asio;
using boost::system::error_code;

Result<std::shared_ptr<TlsSocket>> TlsSocket::Make(Socket socket, asio::ssl::context& context, bool server,
                                                   const std::string& verify_name) {
  SSL* ssl = SSL_new(context.native_handle());
  if (!ssl) return Status::Internal("SSL_new failed");
  SSL_set_mode(ssl, SSL_MODE_RELEASE_BUFFERS | SSL_MODE_ENABLE_PARTIAL_WRITE);
  error_code ec;
  socket.non_blocking(true, ec);
  if (ec || SSL_set_fd(ssl, static_cast<int>(socket.native_handle())) != 1) {
    SSL_free(ssl);
    return Status::Internal("cannot attach TLS to the socket");
  }
  if (server) {
    SSL_set_accept_state(ssl);
  } else {
    SSL_set_connect_state(ssl);
    X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
    error_code not_ip;
    asio::ip::make_address(verify_name, not_ip);
    if (not_ip) {
      SSL_set_tlsext_host_name(ssl, verify_name.c_str());
      X509_VERIFY_PARAM_set1_host(param, verify_name.c_str(), 0);
    } else {
      X509_VERIFY_PARAM_set1_ip_asc(param, verify_name.c_str());
    }
    SSL_set_verify(ssl, SSL_VERIFY_PEER, nullptr);
  }
  return std::shared_ptr<TlsSocket>(new TlsSocket(std::move(socket), ssl));
}

TlsSocket::~TlsSocket() { SSL_free(ssl_); }

void TlsSocket::AsyncHandshake(Handler done) { Run(Op::kHandshake, nullptr, 0, 0, std::move(done)); }

void TlsSocket::AsyncReadExactly(char* data, size_t size, Handler done) {
  Run(Op::kRead, data, size, 0, std::move(done));
}

void TlsSocket::AsyncWriteAll(const char* data, size_t size, Handler done) {
  Run(Op::kWrite, const_cast<char*>(data), size, 0, std::move(done));
}

void TlsSocket::Run(Op op, char* data, size_t size, size_t done_bytes, Handler done) {
  while (op == Op::kHandshake || done_bytes < size) {
    ERR_clear_error();
    int n = 0;
    if (op == Op::kHandshake) {
      n = SSL_do_handshake(ssl_);
      if (n == 1) break;
    } else if (op == Op::kRead) {
      n = SSL_read(ssl_, data + done_bytes, static_cast<int>(std::min<size_t>(size - done_bytes, 1 << 30)));
    } else {
      n = SSL_write(ssl_, data + done_bytes, static_cast<int>(std::min<size_t>(size - done_bytes, 1 << 30)));
    }
    if (op != Op::kHandshake && n > 0) {
      done_bytes += static_cast<size_t>(n);
      continue;
    }
    const int error = SSL_get_error(ssl_, n);
    if (error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE) {
      const auto wait = error == SSL_ERROR_WANT_READ ? Socket::wait_read : Socket::wait_write;
      socket_.async_wait(wait, [self = shared_from_this(), op, data, size, done_bytes,
                                done = std::move(done)](const error_code& ec) mutable {
        if (ec) return done(ec);
        self->Run(op, data, size, done_bytes, std::move(done));
      });
      return;
    }
    if (error == SSL_ERROR_ZERO_RETURN) return done(asio::error::eof);
    const unsigned long reason = ERR_get_error();
    if (reason != 0) return done(error_code(static_cast<int>(reason), asio::error::get_ssl_category()));
    if (error == SSL_ERROR_SYSCALL && errno != 0) return done(error_code(errno, boost::system::system_category()));
    return done(asio::error::eof);  // the peer closed the connection without a TLS close
  }
  done(error_code());
}

}  // namespace clusterd
