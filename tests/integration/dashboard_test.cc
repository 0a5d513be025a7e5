// The head's dashboard over real HTTP on a free loopback port: the token is
// required, the JSON API and Prometheus text answer, the page is served; a
// slow client holds neither the dashboard nor `clusterd stop`; a node's
// names show as text in a real browser (Chromium), never as markup.
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

namespace {

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
  // Found by exploratory testing: the scheme is case-insensitive (RFC 7235),
  // HEAD works wherever GET does, and a 405 says what is allowed.
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
  const std::string t = TokenOf(cluster);
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
      REQUIRE(HttpGet(port, "/api/status", TokenOf(cluster), "", std::chrono::seconds(20)).rfind("HTTP/1.1 200", 0) ==
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
  std::string page = HttpGet(port, "/?token=" + TokenOf(cluster), "", "", std::chrono::seconds(20));
  REQUIRE(page.rfind("HTTP/1.1 303", 0) == 0);
  REQUIRE(HttpGet(port, "/api/status", TokenOf(cluster), "", std::chrono::seconds(20)).rfind("HTTP/1.1 200", 0) == 0);
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

TEST_CASE("node and resource names show as text in a real browser, never as markup", "[dashboard][xss]") {
  const std::string chromium = "/usr/bin/chromium-headless-shell";
  REQUIRE(access(chromium.c_str(), X_OK) == 0);  // package chromium-headless-shell (scripts/lib.sh installs it)
  Cluster cluster;
  int port = FreePort();
  const std::string evil = "<img src=x onerror=document.title='pwned'>";
  // A resource name is letters, digits and '_-.:/': markup cannot come in that way at all.
  RunResult refused = cluster.StartHead({"--num-cpus", "1", "--dashboard-port", std::to_string(port), "--resources",
                                         "{\"" + evil + "\": 1}"});
  INFO(refused.out << refused.err);
  REQUIRE(refused.exit_code == 2);
  REQUIRE(refused.err.find("clusterd start: --resources: a resource name is letters, digits and '_-.:/'") !=
          std::string::npos);
  // A node's name may hold it.
  RunResult started = cluster.StartHead({"--num-cpus", "1", "--dashboard-port", std::to_string(port), "--node-name", evil});
  INFO(started.out << started.err);
  REQUIRE(started.exit_code == 0);
  std::string url = "http://127.0.0.1:" + std::to_string(port) + "/?token=" + TokenOf(cluster);
  RunResult dom = Run({chromium, "--no-sandbox", "--disable-gpu", "--user-data-dir=" + cluster.temp_dir() + "/chromium",
                       "--virtual-time-budget=6000", "--dump-dom", url});
  INFO(dom.out << dom.err);
  REQUIRE(dom.exit_code == 0);
  // The page ran (the node's row is there) and the name is text: escaped in the DOM, no img element.
  REQUIRE(dom.out.find(">ALIVE<") != std::string::npos);
  REQUIRE(dom.out.find("&lt;img src=x onerror=document.title='pwned'&gt;") != std::string::npos);
  REQUIRE(dom.out.find("<img") == std::string::npos);
  REQUIRE(dom.out.find("<title>clusterd</title>") != std::string::npos);
  REQUIRE(dom.out.find("pwned</title>") == std::string::npos);
}

namespace {

// Chromium's DOM of `url` after its scripts ran; a screenshot of it too when `shot` is given.
std::string BrowserDom(Cluster& cluster, const std::string& url, const std::string& shot = "") {
  const std::string chromium = "/usr/bin/chromium-headless-shell";
  std::vector<std::string> common = {chromium, "--no-sandbox", "--disable-gpu",
                                     "--user-data-dir=" + cluster.temp_dir() + "/chromium", "--virtual-time-budget=6000"};
  if (!shot.empty()) {
    std::vector<std::string> argv = common;
    argv.insert(argv.end(), {"--hide-scrollbars", "--window-size=1200,800", "--screenshot=" + shot, url});
    RunResult taken = Run(argv);
    INFO(taken.err);
    REQUIRE(taken.exit_code == 0);
  }
  common.insert(common.end(), {"--dump-dom", url});
  RunResult dom = Run(common);
  INFO(dom.err);
  REQUIRE(dom.exit_code == 0);
  return dom.out;
}

// ctrain_report.py in `dir`: report(values) sends one report through the
// node agent's socket as ctrain's report() does (a 4-byte big-endian
// length, then JSON) and returns the agent's answer.
void WriteReportModule(const std::string& dir) {
  std::ofstream(dir + "/ctrain_report.py") <<
      "import json, os, socket, struct\n"
      "def report(values):\n"
      "    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
      "    s.connect(os.environ['CLUSTER_AGENT_SOCKET'])\n"
      "    body = json.dumps({'values': values}).encode()\n"
      "    s.sendall(struct.pack('>I', len(body)) + body)\n"
      "    n = struct.unpack('>I', s.recv(4))[0]\n"
      "    answer = s.recv(n).decode()\n"
      "    s.close()\n"
      "    return answer\n";
}

// The `points` of the chart of `metric` in a dumped DOM: "x,y x,y ..." -> how many.
int ChartPoints(const std::string& dom, const std::string& metric) {
  auto chart = dom.find("data-metric=\"" + metric + "\"");
  if (chart == std::string::npos) return -1;
  auto points = dom.find("points=\"", dom.find("<polyline", chart));
  if (points == std::string::npos) return -1;
  points += 8;
  std::string list = dom.substr(points, dom.find('"', points) - points);
  return list.empty() ? 0 : 1 + static_cast<int>(std::count(list.begin(), list.end(), ' '));
}

}  // namespace

// Screenshots go to $DASHBOARD_SCREENSHOTS when set (docs/ keeps one of
// each page: DASHBOARD_SCREENSHOTS=docs build/tests/integration_tests "[browser]").
TEST_CASE("the pages show nodes, a job's attempts, log tails and metric charts in a real browser", "[dashboard][browser]") {
  REQUIRE(access("/usr/bin/chromium-headless-shell", X_OK) == 0);
  Cluster cluster;
  int port = FreePort();
  REQUIRE(cluster.StartHead({"--num-cpus", "1", "--dashboard-port", std::to_string(port)}).exit_code == 0);
  REQUIRE(cluster.StartWorker("w1", {"--num-cpus", "1"}).exit_code == 0);
  const std::string token = TokenOf(cluster);

  // A job whose attempt 0 fails (rank 1 exits 3) and whose attempt 1 has
  // rank 0 report six metrics.
  WriteReportModule(cluster.temp_dir());
  std::ofstream(cluster.temp_dir() + "/report.py") <<
      "from ctrain_report import report\n"
      "for step in range(6):\n"
      "    print('report', step, report({'loss': 2.0 / (step + 1), 'accuracy': 0.5 + step / 20}), flush=True)\n";
  const std::string job_file = cluster.temp_dir() + "/charted.yaml";
  std::ofstream(job_file) << "name: charted\nworking_dir: " << cluster.temp_dir() << "\nworking_dir_mode: shared\n"
                          << "num_workers: 2\nmax_failures: 1\nentrypoint: |\n"
                          << "  echo \"hello from rank $RANK attempt $CLUSTER_ATTEMPT\"\n"
                          << "  if [ \"$CLUSTER_ATTEMPT\" = 0 ] && [ \"$RANK\" = 1 ]; then exit 3; fi\n"
                          << "  if [ \"$CLUSTER_ATTEMPT\" = 0 ]; then sleep 30; fi\n"
                          << "  if [ \"$RANK\" = 0 ]; then exec /usr/bin/python3 report.py; fi\n";
  RunResult submitted = cluster.Ctl({"submit", job_file, "--json"});
  REQUIRE(submitted.exit_code == 0);
  const std::string id = SubmittedJobId(submitted);
  JobInfo job = WaitUntilFinal(cluster, id, std::chrono::seconds(60));
  INFO(job.reason());
  REQUIRE(job.state() == SUCCEEDED);
  REQUIRE(job.attempts_size() == 2);

  const char* shots_dir = getenv("DASHBOARD_SCREENSHOTS");
  auto shot = [&](const std::string& page) {
    return std::string(shots_dir ? shots_dir : cluster.temp_dir().c_str()) + "/dashboard-" + page + ".png";
  };
  const std::string base = "http://127.0.0.1:" + std::to_string(port);

  // The cluster: every node by name, under its state.
  std::string nodes = BrowserDom(cluster, base + "/?token=" + token, shot("cluster"));
  INFO(nodes);
  REQUIRE(nodes.find(">ALIVE (2)<") != std::string::npos);
  ClusterStatus status = cluster.Status();
  REQUIRE(status.nodes_size() == 2);
  for (const auto& node : status.nodes()) REQUIRE(nodes.find(">" + node.name() + "<") != std::string::npos);
  REQUIRE(nodes.find("<p id=\"err\"></p>") != std::string::npos);  // no error drawn

  // The job: both attempts, the first one's failure, the placement, each
  // rank's log, and one chart per metric with its six points.
  std::string page = BrowserDom(cluster, base + "/job?id=" + id + "&token=" + token, shot("job"));
  INFO(page);
  REQUIRE(page.find("<h2>Attempts</h2>") != std::string::npos);
  REQUIRE(page.find(job.attempts(0).failure_reason().substr(0, 30)) != std::string::npos);
  REQUIRE(job.attempts(0).failure_reason().find("rank 1 exited with code 3") == 0);
  REQUIRE(page.find("Placement of attempt 1") != std::string::npos);
  REQUIRE(page.find("hello from rank 0 attempt 1") != std::string::npos);
  REQUIRE(page.find("hello from rank 1 attempt 1") != std::string::npos);
  REQUIRE(page.find("Metrics (6 reports)") != std::string::npos);
  REQUIRE(ChartPoints(page, "loss") == 6);
  REQUIRE(ChartPoints(page, "accuracy") == 6);
  REQUIRE(page.find("<p id=\"err\"></p>") != std::string::npos);

  // The job list, filtered; the store.
  std::string failed = BrowserDom(cluster, base + "/jobs?state=FAILED&token=" + token);
  REQUIRE(failed.find(">0 jobs<") != std::string::npos);
  std::string succeeded = BrowserDom(cluster, base + "/jobs?state=SUCCEEDED&token=" + token, shot("jobs"));
  REQUIRE(succeeded.find(">" + id + "<") != std::string::npos);
  REQUIRE(succeeded.find(">1 jobs<") != std::string::npos);
  REQUIRE(BrowserDom(cluster, base + "/store?token=" + token, shot("store")).find("held by live jobs") != std::string::npos);

  // Fifty alike jobs that no node can hold: one row, counted by the head,
  // not a row each (an array of 100,000 was a table of 100,000).
  const std::string wide_file = cluster.temp_dir() + "/wide.yaml";
  std::ofstream(wide_file) << "name: wide\nworking_dir: " << cluster.temp_dir() << "\nworking_dir_mode: shared\n"
                           << "entrypoint: ['/bin/true']\nresources_per_worker: {GPU: 1}\narray: {count: 50}\n";
  REQUIRE(cluster.Ctl({"submit", wide_file}).exit_code == 0);
  std::string waiting = BrowserDom(cluster, base + "/?token=" + token, shot("waiting"));
  INFO(waiting);
  REQUIRE(waiting.find("Waiting for resources") != std::string::npos);
  REQUIRE(waiting.find(" and 49 more like it") != std::string::npos);

  // A wrong token: a refusal, and none of the cluster's data.
  std::string guess = token;
  guess.back() = guess.back() == 'a' ? 'b' : 'a';
  std::string refused = BrowserDom(cluster, base + "/job?id=" + id + "&token=" + guess);
  REQUIRE(refused.find("Token needed") != std::string::npos);
  REQUIRE(refused.find(id) == std::string::npos);
  REQUIRE(refused.find("w1") == std::string::npos);
}

TEST_CASE("the sweeps pages list a sweep and its trials, the best one marked, in a real browser", "[dashboard][browser][sweep]") {
  REQUIRE(access("/usr/bin/chromium-headless-shell", X_OK) == 0);
  Cluster cluster;
  int port = FreePort();
  REQUIRE(cluster.StartHead({"--num-cpus", "2", "--dashboard-port", std::to_string(port)}).exit_code == 0);
  const std::string token = TokenOf(cluster);
  // Each trial reports score = x * step for three steps, as ctrain's
  // report() does. One at a time, best first: ASHA stops the other three
  // at their first report.
  WriteReportModule(cluster.temp_dir());
  std::ofstream(cluster.temp_dir() + "/trial.py") <<
      "import sys\n"
      "from ctrain_report import report\n"
      "x = float(sys.argv[1])\n"
      "for step in range(1, 4):\n"
      "    report({'score': x * step})\n";
  const std::string file = cluster.temp_dir() + "/sweep.yaml";
  std::ofstream(file) << "name: shown-sweep\nworking_dir: " << cluster.temp_dir() << "\nworking_dir_mode: shared\n"
                      << "entrypoint: [/usr/bin/python3, trial.py, '{x}']\n"
                      << "tune:\n  metric: score\n  mode: max\n  num_samples: 1\n  seed: 1\n  max_concurrent: 1\n"
                      << "  search_space:\n    x: {grid: [4, 3, 2, 1]}\n"
                      << "  scheduler:\n    asha: {max_t: 3, grace_period: 1, reduction_factor: 2}\n";
  RunResult submitted = cluster.Ctl({"submit", file, "--json"});
  INFO(submitted.err);
  REQUIRE(submitted.exit_code == 0);
  const auto start = submitted.out.find("sweep-");
  REQUIRE(start != std::string::npos);
  const std::string id = submitted.out.substr(start, submitted.out.find('"', start) - start);
  SweepInfo sweep;
  REQUIRE(WaitFor([&] {
    sweep = ParseJson<SweepInfo>(cluster.Ctl({"sweep", id, "--json"}));
    return sweep.state() != SWEEP_RUNNING;
  }, std::chrono::seconds(90), std::chrono::milliseconds(250)));
  INFO(sweep.DebugString());
  REQUIRE(sweep.state() == SWEEP_SUCCEEDED);
  REQUIRE(sweep.best_trial() == 0);
  const TrialInfo& best = sweep.trials(sweep.best_trial());
  int early = 0;
  for (const auto& trial : sweep.trials()) early += trial.state() == TRIAL_EARLY_STOPPED;
  REQUIRE(early == 3);

  const char* shots_dir = getenv("DASHBOARD_SCREENSHOTS");
  auto shot = [&](const std::string& page) {
    return std::string(shots_dir ? shots_dir : cluster.temp_dir().c_str()) + "/dashboard-" + page + ".png";
  };
  const std::string base = "http://127.0.0.1:" + std::to_string(port);

  // The list: the sweep by id and name, its state, its four trials and best score.
  std::string list = BrowserDom(cluster, base + "/sweeps?token=" + token, shot("sweeps"));
  INFO(list);
  REQUIRE(list.find(">" + id + "<") != std::string::npos);
  REQUIRE(list.find(">shown-sweep<") != std::string::npos);
  REQUIRE(list.find(">SUCCEEDED<") != std::string::npos);
  REQUIRE(list.find(">4: 1 done, 3 early stopped<") != std::string::npos);
  REQUIRE(list.find(">max score<") != std::string::npos);
  REQUIRE(list.find("<p id=\"err\"></p>") != std::string::npos);

  // The sweep: one row per trial with its parameters, state and job link,
  // the best one marked; each stopped trial with ASHA's reason.
  std::string page = BrowserDom(cluster, base + "/sweep?id=" + id + "&token=" + token, shot("sweep"));
  INFO(page);
  REQUIRE(page.find("<h2>Trials</h2>") != std::string::npos);
  for (const auto& trial : sweep.trials()) {
    REQUIRE(page.find(">x=" + trial.params().at("x") + "<") != std::string::npos);
    REQUIRE(page.find("/job?id=" + trial.job_id()) != std::string::npos);
    if (trial.state() != TRIAL_EARLY_STOPPED) continue;
    // As the dumped DOM writes text: "value 3 &lt; cutoff 4".
    std::string reason = trial.reason();
    REQUIRE(reason.find(" < ") != std::string::npos);
    reason.replace(reason.find(" < "), 3, " &lt; ");
    REQUIRE(page.find(">" + reason + "<") != std::string::npos);
  }
  auto marked = page.find("<tr class=\"best\">");
  REQUIRE(marked != std::string::npos);
  REQUIRE(page.find(">x=" + best.params().at("x") + "<", marked) < page.find("</tr>", marked));
  REQUIRE(page.find("<p id=\"err\"></p>") != std::string::npos);

  // A trial's job page leads back to its sweep.
  std::string job = BrowserDom(cluster, base + "/job?id=" + best.job_id() + "&token=" + token);
  REQUIRE(job.find("/sweep?id=" + id) != std::string::npos);
}
