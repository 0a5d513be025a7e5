// The head's dashboard over real HTTP on a free loopback port: the token is
// required, the JSON API and Prometheus text answer, the page is served.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "harness.h"

using namespace clusterd::testing;

namespace {

// One GET on 127.0.0.1:port; returns the whole response (status line to body).
std::string HttpGet(int port, const std::string& target, const std::string& token = "") {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  std::string request = "GET " + target + " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n";
  if (!token.empty()) request += "Authorization: Bearer " + token + "\r\n";
  request += "\r\n";
  REQUIRE(write(fd, request.data(), request.size()) == static_cast<ssize_t>(request.size()));
  std::string response;
  char buffer[4096];
  ssize_t n;
  while ((n = read(fd, buffer, sizeof buffer)) > 0) response.append(buffer, static_cast<size_t>(n));
  close(fd);
  return response;
}

}  // namespace

TEST_CASE("the dashboard needs the token and serves status, jobs, metrics and a page", "[dashboard]") {
  Cluster cluster;
  int port = FreePort();
  RunResult started = cluster.StartHead({"--num-cpus", "2", "--dashboard-port", std::to_string(port)});
  REQUIRE(started.exit_code == 0);
  REQUIRE(started.out.find("Dashboard: http://127.0.0.1:" + std::to_string(port) + "/?token=") != std::string::npos);
  RunResult token = Run({"/bin/cat", cluster.temp_dir() + "/session_latest/token"});
  std::string t = token.out.substr(0, token.out.find('\n'));

  REQUIRE(HttpGet(port, "/api/status").rfind("HTTP/1.1 401", 0) == 0);
  REQUIRE(HttpGet(port, "/api/status", "wrong").find("wrong cluster token") != std::string::npos);

  std::string status = HttpGet(port, "/api/status", t);
  REQUIRE(status.rfind("HTTP/1.1 200", 0) == 0);
  REQUIRE(status.find("\"state\":\"ALIVE\"") != std::string::npos);
  REQUIRE(HttpGet(port, "/api/jobs?token=" + t).rfind("HTTP/1.1 200", 0) == 0);

  std::string metrics = HttpGet(port, "/metrics", t);
  REQUIRE(metrics.find("clusterd_nodes{state=\"ALIVE\"} 1") != std::string::npos);
  REQUIRE(metrics.find("resource=\"CPU\"} 2\n") != std::string::npos);  // clusterd_node_resource_total

  REQUIRE(HttpGet(port, "/").find("<title>clusterd</title>") != std::string::npos);
  REQUIRE(HttpGet(port, "/nope", t).rfind("HTTP/1.1 404", 0) == 0);

  // A second head (another temp dir) whose dashboard port is taken still starts, and says why.
  Cluster other;
  RunResult second = other.StartHead({"--num-cpus", "1", "--dashboard-port", std::to_string(port)});
  REQUIRE(second.exit_code == 0);
  REQUIRE(second.out.find("Dashboard: not started: cannot listen on 127.0.0.1:" + std::to_string(port)) !=
          std::string::npos);
}
