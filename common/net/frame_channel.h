// A TCP connection, plain or TLS (common/net/tls_socket.h), that carries frames: a 4-byte big-endian
// length, then that many bytes (one serialized protobuf). The agents'
// stream to the head runs on it (agent.proto): a connection costs the head
// about a kilobyte of its own, where a gRPC stream cost ~35 KiB (a call
// arena, HTTP/2 state, an 8 KiB read buffer), 340 MiB at 10,000 nodes.
//
// All of a channel's I/O runs on its io_context, which must be run by one
// thread (that is the channel's strand). Send, CloseAfterSends and Close
// may be called from any thread. On a plain connection with nothing queued,
// Send writes the frame itself, from the caller's thread, without holding
// the channel's mutex across the write (nor should its callers hold theirs:
// a peer that reads slowly must not stall threads that only need a lock);
// frames queued while a write is in flight go out together in the next
// write: a burst of launches or exits is one syscall, as gRPC's buffer hint
// made it.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include <google/protobuf/message_lite.h>

#include "common/status.h"
#include "common/net/tls.h"
#include "common/net/tls_socket.h"

namespace clusterd {

inline constexpr size_t kFrameHeaderBytes = 4;
// on_closed's word when the peer closed its side first (what a reader of
// the last frames does after CloseAfterSends).
inline constexpr char kPeerClosedConnection[] = "the peer closed the connection";
// The largest frame a registered agent may send (gRPC's default receive
// limit, which the stream had): a log chunk or a registration with its ranks.
inline constexpr uint32_t kMaxFrameBytes = 4u << 20;

// `message` as one frame: its length, then its bytes.
std::string EncodeFrame(const google::protobuf::MessageLite& message);

class FrameChannel : public std::enable_shared_from_this<FrameChannel> {
 public:
  using Socket = boost::asio::ip::tcp::socket;

  struct Handlers {
    // A whole frame's body, on the io thread. Returning false stops
    // reading and closes the channel (a frame its reader refused).
    std::function<bool(std::string body)> on_frame;
    // Once, on the io thread, when the channel ends: the peer closed it,
    // a read or write failed, a frame was over the limit, or Close().
    std::function<void(const std::string& why)> on_closed;
    // After each write, on the io thread, with the bytes still queued.
    std::function<void(size_t queued)> on_written;
  };

  // A connected socket (TLS: handshaken). Sets TCP_NODELAY and keepalive.
  explicit FrameChannel(Socket socket);
  explicit FrameChannel(std::shared_ptr<TlsSocket> socket);
  FrameChannel(const FrameChannel&) = delete;
  FrameChannel& operator=(const FrameChannel&) = delete;

  // Begins reading frames; a frame longer than max_frame_bytes ends the
  // channel before a byte of it is held. Call once, on any thread.
  void Start(Handlers handlers, uint32_t max_frame_bytes);
  // From the io thread only (a reader that has authenticated its peer).
  void set_max_frame_bytes(uint32_t bytes) { max_frame_bytes_ = bytes; }
  // Queues `frame` (EncodeFrame's); dropped once the channel is closing.
  void Send(std::string frame);
  // Sends what is queued, half-closes, and closes once the peer has (or
  // after a few seconds), so that the last frame is read and not lost to
  // a reset. Frames that arrive meanwhile are dropped.
  void CloseAfterSends();
  // Closes now: on_closed(why) follows on the io thread.
  void Close(std::string why);

  // Where its handlers run (for timers that go with it).
  Socket::executor_type executor() { return lowest().get_executor(); }
  size_t queued_bytes() const;
  bool closed() const;
  // How long ago the peer's kernel last acknowledged anything (TCP_INFO's
  // last_ack_recv, ms): a peer whose process is stopped or starved still
  // answers what this end sends (data, or window probes once its receive
  // buffer is full); one whose machine is gone or cut off does not.
  // -1 once closed.
  int64_t MillisSincePeerAcked() const;
  // "ipv4:127.0.0.1:40312", as gRPC named peers, for log lines.
  const std::string& peer() const { return peer_; }

 private:
  Socket& lowest();
  void ReadHeader();
  void ReadBody(uint32_t length);
  void WriteQueued();  // on the io thread
  void Shutdown();     // on the io thread, once the queue is out
  void CloseNow(const std::string& why);  // on the io thread

  std::optional<Socket> plain_;
  std::shared_ptr<TlsSocket> tls_;  // or this
  std::string peer_;
  Handlers handlers_;
  uint32_t max_frame_bytes_ = kMaxFrameBytes;
  unsigned char header_[kFrameHeaderBytes] = {};
  std::string body_;
  std::unique_ptr<boost::asio::steady_timer> linger_;  // only while closing after sends
  bool reading_ = false;  // a read is under way (io thread only)

  mutable std::mutex mutex_;  // guards the fields below
  std::string queued_;     // frames not yet handed to a write
  std::string in_flight_;  // the write under way
  bool writing_ = false;       // the io thread's write, or a Send's, is under way: one writer at a time
  bool sending_here_ = false;  // a Send is inside send() on the socket, the mutex released
  bool closing_ = false;  // CloseAfterSends: no new frames
  bool closed_ = false;
};

// TLS contexts from the cluster's files (tls.h): the head's, with its
// certificate and key; the dialer's, verifying the head against the CA.
Result<std::shared_ptr<boost::asio::ssl::context>> ServerTlsContext(const TlsConfig& tls);
Result<std::shared_ptr<boost::asio::ssl::context>> ClientTlsContext(const TlsConfig& tls);

// Connects to host:port (TLS when tls is on, verifying the head's name:
// tls.target_name_override, else host) within timeout_ms. Blocks the
// caller; the io_context must be running on another thread.
Result<std::shared_ptr<FrameChannel>> DialFrameChannel(boost::asio::io_context* io, const std::string& host,
                                                       int port, const TlsConfig& tls, int timeout_ms);

}  // namespace clusterd
