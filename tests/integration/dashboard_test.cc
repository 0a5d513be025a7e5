// The head's dashboard over real HTTP on a free loopback port: the token is
// required, the JSON API and Prometheus text answer, the page is served; a
// slow client holds neither the dashboard nor `clusterd stop`. The pages in
// a real browser: dashboard_browser_test.cc.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <thread>

#include "harness.h"
#include "http_get.h"
#include "job_json.h"

using namespace clusterd;
using namespace clusterd::testing;

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
  REQUIRE(metrics.find("resource=\"CPU\"} 2\n") != std::string::npos);  // clusterd_node_resource_capacity

  REQUIRE(HttpGet(port, "/nope", t).rfind("HTTP/1.1 404", 0) == 0);

  // A page: the token in the address becomes an HttpOnly, same-site cookie
  // and leaves the address; the page then comes with the cookie alone.
  std::string moved = HttpGet(port, "/jobs?state=FAILED&token=" + t);
  INFO(moved);
  REQUIRE(moved.rfind("HTTP/1.1 303", 0) == 0);
  REQUIRE(moved.find("Set-Cookie: clusterd_token=" + t + "; HttpOnly; SameSite=Strict; Path=/\r\n") != std::string::npos);
  REQUIRE(moved.find("Location: /jobs?state=FAILED\r\n") != std::string::npos);
  std::string page = HttpGet(port, "/jobs", "", "Cookie: clusterd_token=" + t + "\r\n");
  REQUIRE(page.rfind("HTTP/1.1 200", 0) == 0);
  REQUIRE(page.find("<title>clusterd</title>") != std::string::npos);
  REQUIRE(page.find("Content-Security-Policy: default-src 'none'") != std::string::npos);
  // The page's style and script, over the wire: no token, their own content types, never kept stale.
  for (const auto& [asset, type] : std::vector<std::pair<std::string, std::string>>{
           {"/assets/dashboard.js", "text/javascript; charset=utf-8"}, {"/assets/dashboard.css", "text/css; charset=utf-8"}}) {
    std::string served = HttpGet(port, asset);
    INFO(served.substr(0, served.find("\r\n\r\n")));
    REQUIRE(served.rfind("HTTP/1.1 200", 0) == 0);
    REQUIRE(served.find("Content-Type: " + type + "\r\n") != std::string::npos);
    const std::string no_store = "Cache-Control: no-store\r\n";
    const size_t cache = served.find("Cache-Control: ");
    REQUIRE(cache != std::string::npos);
    REQUIRE(served.compare(cache, no_store.size(), no_store) == 0);
    REQUIRE(served.find("Cache-Control: ", cache + 1) == std::string::npos);  // one, not two that disagree
  }
  REQUIRE(HttpGet(port, "/assets/nope.js").rfind("HTTP/1.1 404", 0) == 0);
  // The API answers the cookie too (the page's own fetches).
  REQUIRE(HttpGet(port, "/api/status", "", "Cookie: clusterd_token=" + t + "\r\n").rfind("HTTP/1.1 200", 0) == 0);
  // No token, a wrong one in the address or in the cookie: a refusal page, no data, no cookie.
  for (const auto& [target, cookie] : std::vector<std::pair<std::string, std::string>>{
           {"/", ""}, {"/?token=" + guess, ""}, {"/job?id=job-0001", "Cookie: clusterd_token=" + guess + "\r\n"}}) {
    std::string refusal = HttpGet(port, target, "", cookie);
    INFO(target << " " << cookie << ": " << refusal);
    REQUIRE(refusal.rfind("HTTP/1.1 401", 0) == 0);
    REQUIRE(refusal.find("Token needed") != std::string::npos);
    REQUIRE(refusal.find("<script") == std::string::npos);
    REQUIRE(refusal.find("Set-Cookie") == std::string::npos);
  }
  // Bad questions get a one-line reason.
  REQUIRE(HttpGet(port, "/api/job?id=job-9999", t).find("no job 'job-9999'") != std::string::npos);
  REQUIRE(HttpGet(port, "/api/jobs?state=GONE", t).find("state=GONE is not a job state") != std::string::npos);
  REQUIRE(HttpGet(port, "/api/store", t).find("\"capacity_bytes\"") != std::string::npos);
  // As HTTP clients expect: the scheme is case-insensitive (RFC 7235), HEAD
  // works wherever GET does, and a 405 says what is allowed.
  REQUIRE(HttpGet(port, "/api/store", "", "Authorization: bearer " + t + "\r\n").rfind("HTTP/1.1 200", 0) == 0);
  const std::string head = Exchange(ConnectLoopback(port), "HEAD /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                                    "Authorization: Bearer " + t + "\r\n\r\n", std::chrono::seconds(60));
  REQUIRE(head.rfind("HTTP/1.1 200", 0) == 0);
  REQUIRE(head.find("Content-Length: ") != std::string::npos);
  REQUIRE(head.substr(head.find("\r\n\r\n") + 4).empty());
  const std::string post = Exchange(ConnectLoopback(port), "POST /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                                    "Content-Length: 0\r\n\r\n", std::chrono::seconds(60));
  REQUIRE(post.rfind("HTTP/1.1 405", 0) == 0);
  REQUIRE(post.find("Allow: GET, HEAD\r\n") != std::string::npos);

  // A second head (another temp dir) whose dashboard port is taken still starts, and says why.
  Cluster other;
  RunResult second = other.StartHead({"--num-cpus", "1", "--dashboard-port", std::to_string(port)});
  REQUIRE(second.exit_code == 0);
  REQUIRE(second.out.find("Dashboard: not started: cannot listen on 127.0.0.1:" + std::to_string(port)) !=
          std::string::npos);
}

// env_passthrough is how credentials reach ranks (WANDB_API_KEY): the
// rank gets the value, and nobody who reads the job's record does.
TEST_CASE("a passthrough variable's value reaches the rank while clusterctl and the dashboard show its name only",
          "[dashboard][secrets]") {
  Cluster cluster;
  int port = FreePort();
  REQUIRE(cluster.StartHead({"--num-cpus", "1", "--dashboard-port", std::to_string(port)}).exit_code == 0);
  const std::string t = cluster.Token();
  const std::string secret = "sk-passthrough-7f3a9c";
  const std::string seen = cluster.temp_dir() + "/seen";
  std::string path = cluster.temp_dir() + "/secret.yaml";
  std::ofstream(path) << "name: secret\nworking_dir: " << cluster.temp_dir() << "\nworking_dir_mode: shared\n"
                      << "env_passthrough: ['WANDB_*']\n"
                      << "entrypoint: printf %s \"$WANDB_API_KEY\" > " << seen << "\n";
  std::string job = SubmittedJobId(cluster.Ctl({"submit", path, "--json"}, std::chrono::seconds(30),
                                               {{"WANDB_API_KEY", secret}}));
  REQUIRE(WaitUntilFinal(cluster, job, std::chrono::seconds(60)).state() == SUCCEEDED);
  REQUIRE(Slurp(seen) == secret);

  std::vector<std::pair<std::string, std::string>> shown = {
      {"clusterctl job --json", cluster.Ctl({"job", job, "--json"}).out},
      {"clusterctl jobs --json", cluster.Ctl({"jobs", "--json"}).out},
      {"clusterctl job", cluster.Ctl({"job", job}).out},
      {"/api/job", HttpGet(port, "/api/job?id=" + job, t)},
      {"/api/jobs", HttpGet(port, "/api/jobs", t)}};
  for (const auto& [where, text] : shown) {
    INFO(where << ": " << text);
    REQUIRE(text.find(secret) == std::string::npos);
    if (where == "clusterctl job") {
      REQUIRE(text.find("WANDB_* -> WANDB_API_KEY") != std::string::npos);
    } else {
      REQUIRE(text.find("\"WANDB_API_KEY\":") != std::string::npos);
      REQUIRE(text.find("(hidden)") != std::string::npos);
    }
  }
  // Nor is it in the head's log.
  RunResult logs = Run({"/bin/sh", "-c", "cat " + cluster.temp_dir() + "/session_latest/logs/*.log"});
  REQUIRE(logs.out.find(secret) == std::string::npos);
}

TEST_CASE("a slow client holds neither the dashboard nor clusterd stop", "[dashboard][slowloris]") {
  Cluster cluster;
  int port = FreePort();
  REQUIRE(cluster.StartHead({"--num-cpus", "1", "--dashboard-port", std::to_string(port)}).exit_code == 0);

  // /api/status's latency, median of 9, before and while a client trickles.
  auto median_status_ms = [&] {
    std::vector<int64_t> ms;
    for (int i = 0; i < 9; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      REQUIRE(HttpGet(port, "/api/status", cluster.Token(), "", std::chrono::seconds(20)).rfind("HTTP/1.1 200", 0) ==
              0);
      ms.push_back(MillisSince(t0));
    }
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
  };
  const int64_t alone_ms = median_status_ms();

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
  std::string page = HttpGet(port, "/?token=" + cluster.Token(), "", "", std::chrono::seconds(20));
  REQUIRE(page.rfind("HTTP/1.1 303", 0) == 0);
  REQUIRE(HttpGet(port, "/api/status", cluster.Token(), "", std::chrono::seconds(20)).rfind("HTTP/1.1 200", 0) == 0);
  REQUIRE(MillisSince(start) < 15'000);
  // The bound: the trickling client delays nobody by 100 ms.
  const int64_t beside_slow_ms = median_status_ms();
  INFO("/api/status median " << alone_ms << " ms alone, " << beside_slow_ms << " ms beside a trickling client");
  REQUIRE(beside_slow_ms - alone_ms < 100);

  // And the head stops by itself while the slow client still trickles.
  start = std::chrono::steady_clock::now();
  RunResult stopped = cluster.Stop({"--grace-period", "30"});
  INFO(stopped.out << stopped.err);
  REQUIRE(stopped.exit_code == 0);
  REQUIRE(stopped.out.find("SIGKILL") == std::string::npos);
  REQUIRE(MillisSince(start) < 20'000);
}
