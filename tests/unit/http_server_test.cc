// The dashboard's HTTP server on a real loopback socket: a bounded number of
// connections, a deadline per request, and a Stop() that returns promptly
// with clients connected and a reply still owed by another thread.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "daemon/http/http_server.h"

using namespace clusterd;
using namespace std::chrono_literals;

namespace {

int Connect(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  timeval timeout{10, 0};  // a generous outer limit on every read
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  return fd;
}

// Everything until the server closes (or 10 s of silence).
std::string ReadToEnd(int fd) {
  std::string out;
  char buffer[4096];
  ssize_t n;
  while ((n = read(fd, buffer, sizeof buffer)) > 0) out.append(buffer, static_cast<size_t>(n));
  return out;
}

std::string Get(int port, const std::string& target) {
  int fd = Connect(port);
  std::string request = "GET " + target + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  REQUIRE(send(fd, request.data(), request.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(request.size()));
  std::string response = ReadToEnd(fd);
  close(fd);
  return response;
}

int64_t MillisSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
}

HttpServer::Handler Echo() {
  return [](const HttpRequest& request, HttpServer::Respond respond) {
    respond({200, "text/plain", request.method + " " + request.target});
  };
}

}  // namespace

// New connections past the limit are not closed at once: else 64 that never
// send a byte (each opened again when cut) keep every real client and
// Prometheus out.
TEST_CASE("http server: past the limit the connection that waited longest for a request makes room, and idle ones "
          "end at the deadline",
          "[http]") {
  HttpServer::Limits limits;
  limits.max_connections = 4;
  limits.deadline = 2000ms;
  HttpServer server(Echo(), limits);
  REQUIRE(server.Start("127.0.0.1", 0).ok());
  REQUIRE(Get(server.port(), "/a").find("GET /a") != std::string::npos);

  std::vector<int> idle;
  for (int i = 0; i < 4; ++i) {
    idle.push_back(Connect(server.port()));
    std::this_thread::sleep_for(50ms);  // accepted in this order
  }
  // A fifth, with a request, is answered; the first idle one made room.
  auto start = std::chrono::steady_clock::now();
  REQUIRE(Get(server.port(), "/b").find("GET /b") != std::string::npos);
  REQUIRE(ReadToEnd(idle[0]).empty());
  REQUIRE(MillisSince(start) < 1000);  // not its 2 s deadline
  close(idle[0]);
  // The other idle ones are cut at their deadline.
  for (size_t i = 1; i < idle.size(); ++i) {
    REQUIRE(ReadToEnd(idle[i]).empty());
    close(idle[i]);
  }
  REQUIRE(MillisSince(start) < 5000);
  REQUIRE(Get(server.port(), "/c").find("GET /c") != std::string::npos);
}

TEST_CASE("http server: Stop returns promptly with idle clients and a reply owed by another thread", "[http]") {
  std::mutex mutex;
  std::vector<HttpServer::Respond> owed;
  HttpServer server(
      [&](const HttpRequest&, HttpServer::Respond respond) {
        std::lock_guard<std::mutex> lock(mutex);
        owed.push_back(std::move(respond));
      },
      HttpServer::Limits{});
  REQUIRE(server.Start("127.0.0.1", 0).ok());
  int idle = Connect(server.port());
  int asking = Connect(server.port());
  std::string request = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  REQUIRE(send(asking, request.data(), request.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(request.size()));
  for (int i = 0; i < 200; ++i) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (!owed.empty()) break;
    }
    std::this_thread::sleep_for(10ms);
  }
  // The reply comes from another thread while Stop waits for it.
  size_t owed_when_replying = 0;
  std::thread replier([&] {
    std::this_thread::sleep_for(200ms);
    std::lock_guard<std::mutex> lock(mutex);
    owed_when_replying = owed.size();
    if (!owed.empty()) owed[0]({200, "text/plain", "late"});
    owed.clear();
  });
  auto start = std::chrono::steady_clock::now();
  server.Stop();
  replier.join();
  REQUIRE(owed_when_replying == 1);
  REQUIRE(MillisSince(start) < 1500);  // not the 10 s request deadline, nor Stop's 2 s bound
  REQUIRE(ReadToEnd(idle).empty());     // closed, not left hanging
  close(idle);
  close(asking);
  // Stop twice is harmless.
  server.Stop();
}
