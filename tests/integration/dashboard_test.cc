// The head's dashboard over real HTTP on a free loopback port: the token is
// required, the JSON API and Prometheus text answer, the page is served; a
// slow client holds neither the dashboard nor `clusterd stop`; a node's
// names show as text in a real browser (Chromium), never as markup.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

#include "harness.h"

using namespace clusterd::testing;

namespace {

int ConnectLoopback(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  return fd;
}

// One GET on 127.0.0.1:port; returns the whole response (status line to
// body), or what came before the server went silent for `patience`.
std::string HttpGet(int port, const std::string& target, const std::string& token = "",
                    const std::string& extra_headers = "", std::chrono::seconds patience = std::chrono::seconds(60)) {
  int fd = ConnectLoopback(port);
  timeval timeout{static_cast<time_t>(patience.count()), 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  std::string request = "GET " + target + " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n" + extra_headers;
  if (!token.empty()) request += "Authorization: Bearer " + token + "\r\n";
  request += "\r\n";
  REQUIRE(send(fd, request.data(), request.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(request.size()));
  std::string response;
  char buffer[4096];
  ssize_t n;
  while ((n = read(fd, buffer, sizeof buffer)) > 0) response.append(buffer, static_cast<size_t>(n));
  close(fd);
  return response;
}

std::string TokenOf(Cluster& cluster) {
  RunResult token = Run({"/bin/cat", cluster.temp_dir() + "/session_latest/token"});
  return token.out.substr(0, token.out.find('\n'));
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
  // A guess of the right length, differing only in its last character, is refused the same way.
  std::string guess = t;
  guess.back() = guess.back() == 'a' ? 'b' : 'a';
  std::string refused = HttpGet(port, "/api/status", guess);
  REQUIRE(refused.rfind("HTTP/1.1 401", 0) == 0);
  REQUIRE(refused.find("wrong cluster token") != std::string::npos);
  REQUIRE(HttpGet(port, "/api/status?token=" + guess).rfind("HTTP/1.1 401", 0) == 0);
  // Headers past the limit (8 KiB) are refused, not buffered.
  REQUIRE(HttpGet(port, "/api/status", t, "X-Padding: " + std::string(16 * 1024, 'x') + "\r\n")
              .rfind("HTTP/1.1 431", 0) == 0);

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

TEST_CASE("a slow client holds neither the dashboard nor clusterd stop", "[dashboard][slowloris]") {
  Cluster cluster;
  int port = FreePort();
  REQUIRE(cluster.StartHead({"--num-cpus", "1", "--dashboard-port", std::to_string(port)}).exit_code == 0);

  // Half a request line, then a byte now and then, never the end of the headers.
  int slow = ConnectLoopback(port);
  std::string half = "GET /api/sta";
  REQUIRE(send(slow, half.data(), half.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(half.size()));
  std::atomic<bool> done{false};
  std::thread trickle([&] {
    while (!done) {
      if (send(slow, "t", 1, MSG_NOSIGNAL) != 1) return;  // the server hung up on it
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
    }
  });
  struct Joiner {
    std::atomic<bool>& done;
    std::thread& thread;
    int fd;
    ~Joiner() {
      done = true;
      thread.join();
      close(fd);
    }
  } joiner{done, trickle, slow};

  // Another client is served meanwhile (the bound is only a generous outer limit).
  auto start = std::chrono::steady_clock::now();
  std::string page = HttpGet(port, "/", "", "", std::chrono::seconds(20));
  REQUIRE(page.find("<title>clusterd</title>") != std::string::npos);
  REQUIRE(HttpGet(port, "/api/status", TokenOf(cluster), "", std::chrono::seconds(20)).rfind("HTTP/1.1 200", 0) == 0);
  REQUIRE(MillisSince(start) < 15'000);

  // And the head stops by itself while the slow client still trickles.
  start = std::chrono::steady_clock::now();
  RunResult stopped = cluster.Stop({"--grace-period", "30"});
  INFO(stopped.out << stopped.err);
  REQUIRE(stopped.exit_code == 0);
  REQUIRE(stopped.out.find("SIGKILL") == std::string::npos);
  REQUIRE(MillisSince(start) < 20'000);
}

TEST_CASE("node and resource names show as text in a real browser, never as markup", "[dashboard][xss]") {
  const std::string chromium = "/usr/bin/chromium-headless-shell";
  REQUIRE(access(chromium.c_str(), X_OK) == 0);  // package chromium-headless-shell (scripts/lib.sh installs it)
  Cluster cluster;
  int port = FreePort();
  const std::string evil = "<img src=x onerror=document.title='pwned'>";
  REQUIRE(cluster.StartHead({"--num-cpus", "1", "--dashboard-port", std::to_string(port), "--resources",
                             "{\"" + evil + "\": 1}"}).exit_code == 0);
  std::string url = "http://127.0.0.1:" + std::to_string(port) + "/?token=" + TokenOf(cluster);
  RunResult dom = Run({chromium, "--no-sandbox", "--disable-gpu", "--user-data-dir=" + cluster.temp_dir() + "/chromium",
                       "--virtual-time-budget=6000", "--dump-dom", url});
  INFO(dom.out << dom.err);
  REQUIRE(dom.exit_code == 0);
  // The page ran (the node's row is there) and the name is text: escaped in the DOM, no img element.
  REQUIRE(dom.out.find(">ALIVE<") != std::string::npos);
  REQUIRE(dom.out.find("1 &lt;img src=x onerror=document.title='pwned'&gt;") != std::string::npos);
  REQUIRE(dom.out.find("<img") == std::string::npos);
  REQUIRE(dom.out.find("<title>clusterd</title>") != std::string::npos);
  REQUIRE(dom.out.find("pwned</title>") == std::string::npos);
}
