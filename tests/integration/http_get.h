// A plain HTTP/1.1 GET over loopback for the dashboard's tests: what a
// browser or curl sends, and everything that comes back.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <string>

namespace clusterd::testing {

// A socket connected to 127.0.0.1:port, or -1.
inline int TryConnectLoopback(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) return fd;
  close(fd);
  return -1;
}

// A connected socket to 127.0.0.1:port (REQUIREd).
inline int ConnectLoopback(int port) {
  int fd = TryConnectLoopback(port);
  REQUIRE(fd >= 0);
  return fd;
}

// Sends `request` on fd, then reads until the server closes or is silent
// for `patience`; closes fd. The whole response.
inline std::string Exchange(int fd, const std::string& request, std::chrono::seconds patience) {
  timeval timeout{static_cast<time_t>(patience.count()), 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  std::string response;
  if (send(fd, request.data(), request.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(request.size())) {
    char buffer[4096];
    ssize_t n;
    while ((n = read(fd, buffer, sizeof buffer)) > 0) response.append(buffer, static_cast<size_t>(n));
  }
  close(fd);
  return response;
}

inline std::string GetRequest(const std::string& target, const std::string& token, const std::string& extra_headers) {
  std::string request = "GET " + target + " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n" + extra_headers;
  if (!token.empty()) request += "Authorization: Bearer " + token + "\r\n";
  return request + "\r\n";
}

// One GET on 127.0.0.1:port; returns the whole response (status line to
// body), or what came before the server went silent for `patience`.
inline std::string HttpGet(int port, const std::string& target, const std::string& token = "",
                           const std::string& extra_headers = "",
                           std::chrono::seconds patience = std::chrono::seconds(60)) {
  return Exchange(ConnectLoopback(port), GetRequest(target, token, extra_headers), patience);
}

// The same where nothing may listen yet (a server starting): "" then.
inline std::string TryHttpGet(int port, const std::string& target) {
  int fd = TryConnectLoopback(port);
  return fd < 0 ? "" : Exchange(fd, GetRequest(target, "", ""), std::chrono::seconds(60));
}

}  // namespace clusterd::testing
