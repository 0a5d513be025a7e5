// Frame channels for tests: an io thread, a loopback pair of channels,
// and a handler set that records what arrives.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>

#include <catch2/catch.hpp>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "common/net/frame_channel.h"

namespace clusterd::testing {

// A listening TCP socket on 127.0.0.1 (any port: *port says which), for a
// head played by hand with blocking calls; rcvbuf > 0 shrinks its
// receive window first. The caller closes it.
inline int ListenOnLoopback(int* port, int rcvbuf = 0) {
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(listener >= 0);
  if (rcvbuf > 0) setsockopt(listener, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof address;
  REQUIRE(bind(listener, reinterpret_cast<sockaddr*>(&address), size) == 0);
  REQUIRE(listen(listener, 16) == 0);
  REQUIRE(getsockname(listener, reinterpret_cast<sockaddr*>(&address), &size) == 0);
  *port = ntohs(address.sin_port);
  return listener;
}

// An io_context run by one thread for the test's life.
struct IoThread {
  boost::asio::io_context io;
  std::thread thread{[this] {
    auto work = boost::asio::make_work_guard(io);
    io.run();
  }};
  ~IoThread() {
    boost::asio::post(io, [this] { io.stop(); });
    thread.join();
  }
};

// Records one channel's frames and its end.
struct Received {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<std::string> frames;
  std::optional<std::string> closed;

  FrameChannel::Handlers Handlers() {
    FrameChannel::Handlers handlers;
    handlers.on_frame = [this](std::string body) {
      std::lock_guard<std::mutex> lock(mutex);
      frames.push_back(std::move(body));
      changed.notify_all();
      return true;
    };
    handlers.on_closed = [this](const std::string& why) {
      std::lock_guard<std::mutex> lock(mutex);
      closed = why;
      changed.notify_all();
    };
    return handlers;
  }
  // Waits up to 20 s (an outer bound for a loaded machine) for `done`.
  template <typename Done>
  bool WaitFor(Done done) {
    std::unique_lock<std::mutex> lock(mutex);
    return changed.wait_for(lock, std::chrono::seconds(20), [&] { return done(*this); });
  }
};

// A plain TCP pair on loopback: the dialer's channel and the acceptor's.
inline std::pair<std::shared_ptr<FrameChannel>, std::shared_ptr<FrameChannel>> LoopbackPair(IoThread* io) {
  using tcp = boost::asio::ip::tcp;
  tcp::acceptor acceptor(io->io, tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
  const int port = acceptor.local_endpoint().port();
  std::optional<Result<std::shared_ptr<FrameChannel>>> dialed;
  std::thread dialer([&] { dialed = DialFrameChannel(&io->io, "127.0.0.1", port, TlsConfig{}, 5000); });
  tcp::socket accepted = acceptor.accept();
  dialer.join();
  REQUIRE(dialed->ok());
  return {std::move(**dialed), std::make_shared<FrameChannel>(std::move(accepted))};
}

// A started loopback pair with what each side receives; the records
// outlive the io thread, which calls into them.
struct StartedPair {
  explicit StartedPair(uint32_t server_limit = kMaxFrameBytes) {
    std::tie(client, server) = LoopbackPair(&io);
    server->Start(at_server.Handlers(), server_limit);
    client->Start(at_client.Handlers(), kMaxFrameBytes);
  }
  Received at_client, at_server;
  IoThread io;
  std::shared_ptr<FrameChannel> client, server;
};

}  // namespace clusterd::testing
