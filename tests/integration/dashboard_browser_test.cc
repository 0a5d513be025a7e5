// The head's dashboard pages in a real browser (Chromium, headless): a
// node's names show as text, never as markup; the pages show nodes, a job's
// attempts, log tails, metric charts and sweeps.
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
#include "report_module.h"

using namespace clusterd;
using namespace clusterd::testing;
using namespace std::chrono_literals;

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
  std::string url = "http://127.0.0.1:" + std::to_string(port) + "/?token=" + cluster.Token();
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
    argv.insert(argv.end(), {"--hide-scrollbars", "--window-size=1000,700", "--screenshot=" + shot, url});
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

// How many points the line of the chart of `metric` has in a dumped DOM
// (its one series: "M x y L x y ..."), -1 when there is no such chart.
int ChartPoints(const std::string& dom, const std::string& metric) {
  auto chart = dom.find("class=\"chart\" data-chart=\"metric-" + metric + "\"");
  if (chart == std::string::npos) return -1;
  auto line = dom.find(" d=\"", dom.find("class=\"series", chart));
  if (line == std::string::npos) return -1;
  line += 4;
  std::string d = dom.substr(line, dom.find('"', line) - line);
  return static_cast<int>(std::count(d.begin(), d.end(), 'M') + std::count(d.begin(), d.end(), 'L'));
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

// Where a page's screenshot goes: $DASHBOARD_SCREENSHOTS, else the cluster's folder.
std::string ScreenshotPath(const Cluster& cluster, const std::string& page) {
  const char* shots_dir = getenv("DASHBOARD_SCREENSHOTS");
  return std::string(shots_dir ? shots_dir : cluster.temp_dir().c_str()) + "/dashboard-" + page + ".png";
}

}  // namespace

// Screenshots go to $DASHBOARD_SCREENSHOTS when set (docs/images/ keeps one
// of each page: DASHBOARD_SCREENSHOTS=docs/images build/tests/integration_tests
// "[browser]"); the cluster's and a job's are dashboard_usage_test.cc's, with
// their use over time.
TEST_CASE("the pages show nodes, a job's attempts, log tails and metric charts in a real browser", "[dashboard][browser]") {
  REQUIRE(access("/usr/bin/chromium-headless-shell", X_OK) == 0);
  Cluster cluster;
  int port = FreePort();
  REQUIRE(cluster.StartHead({"--num-cpus", "1", "--dashboard-port", std::to_string(port)}).exit_code == 0);
  REQUIRE(cluster.StartWorker("w1", {"--num-cpus", "1"}).exit_code == 0);
  const std::string token = cluster.Token();

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

  auto shot = [&](const std::string& page) { return ScreenshotPath(cluster, page); };
  const std::string base = "http://127.0.0.1:" + std::to_string(port);

  // The cluster: every node by name, under its state.
  std::string nodes = BrowserDom(cluster, base + "/?token=" + token);
  INFO(nodes);
  REQUIRE(nodes.find(">ALIVE (2)<") != std::string::npos);
  ClusterStatus status = cluster.Status();
  REQUIRE(status.nodes_size() == 2);
  for (const auto& node : status.nodes()) REQUIRE(nodes.find(">" + node.name() + "<") != std::string::npos);
  REQUIRE(nodes.find("<p id=\"err\"></p>") != std::string::npos);  // no error drawn

  // The job: both attempts, the first one's failure, the placement, each
  // rank's log, and one chart per metric with its six points.
  std::string page = BrowserDom(cluster, base + "/job?id=" + id + "&token=" + token);
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
  std::string waiting = BrowserDom(cluster, base + "/?token=" + token);
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
  const std::string token = cluster.Token();
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

  auto shot = [&](const std::string& page) { return ScreenshotPath(cluster, page); };
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
  // The overlay: one line per trial, named, an x where ASHA stopped each of
  // the three, the best trial's line (all three of its reports) the strong one.
  const auto overlay = page.find("class=\"chart\" data-chart=\"trials\"");
  REQUIRE(overlay != std::string::npos);
  const std::string chart = page.substr(overlay, page.find("</svg>", overlay) - overlay);
  CHECK(chart.find(">iteration<") != std::string::npos);
  CHECK(Count(chart, "class=\"series") == 4);
  CHECK(Count(chart, "class=\"stop-mark\"") == 3);
  CHECK(Count(chart, "class=\"series strong\"") == 1);
  for (const auto& trial : sweep.trials()) {
    const std::string name = "data-series=\"trial " + std::to_string(trial.index()) + " (x=" + trial.params().at("x") + ")\"";
    INFO(name);
    const bool best_one = trial.index() == sweep.best_trial();
    CHECK(chart.find((best_one ? "class=\"series strong\" " : "class=\"series faint\" ") + name) != std::string::npos);
    CHECK((chart.find("class=\"stop-mark\" " + name) != std::string::npos) == (trial.state() == TRIAL_EARLY_STOPPED));
  }
  const auto strong = chart.find(" d=\"", chart.find("class=\"series strong\""));
  const std::string strong_line = chart.substr(strong, chart.find('"', strong + 4) - strong);
  CHECK(Count(strong_line, "L") == 2);  // three points: M, L, L
  auto marked = page.find("<tr class=\"best\">");
  REQUIRE(marked != std::string::npos);
  REQUIRE(page.find(">x=" + best.params().at("x") + "<", marked) < page.find("</tr>", marked));
  REQUIRE(page.find("<p id=\"err\"></p>") != std::string::npos);

  // A trial's job page leads back to its sweep.
  std::string job = BrowserDom(cluster, base + "/job?id=" + best.job_id() + "&token=" + token);
  REQUIRE(job.find("/sweep?id=" + id) != std::string::npos);
}

TEST_CASE("a job's entrypoint reads as a command line and every node's resources in one order, in a real browser",
          "[dashboard][browser][rendering]") {
  REQUIRE(access("/usr/bin/chromium-headless-shell", X_OK) == 0);
  Cluster cluster;
  int port = FreePort();
  // Names on both sides of "memory" in byte order (TPU before it, trainium
  // after), given in different orders on the two nodes: only a fixed order
  // writes both rows alike.
  REQUIRE(cluster.StartHead({"--num-cpus", "1", "--memory", "25232932864", "--resources",
                             R"({"trainium": 2, "TPU": 1})", "--dashboard-port", std::to_string(port)})
              .exit_code == 0);
  REQUIRE(cluster.StartWorker("w1", {"--num-cpus", "2", "--memory", "1073741824", "--resources",
                                     R"({"TPU": 4, "trainium": 1})"})
              .exit_code == 0);
  const std::string token = cluster.Token();
  const std::string base = "http://127.0.0.1:" + std::to_string(port);

  const std::string nodes = BrowserDom(cluster, base + "/?token=" + token);
  INFO(nodes);
  REQUIRE(nodes.find(">ALIVE (2)<") != std::string::npos);
  CHECK(nodes.find("<td>1 CPU, 23.5 GiB memory, 1 TPU, 2 trainium</td>") != std::string::npos);
  CHECK(nodes.find("<td>2 CPU, 1.0 GiB memory, 4 TPU, 1 trainium</td>") != std::string::npos);
  // `clusterctl status` writes them alike.
  const std::string status = cluster.Ctl({"status"}).out;
  CHECK(status.find(", 1 CPU, 23.5 GiB memory, 1 TPU, 2 trainium; last heard") != std::string::npos);
  CHECK(status.find(", 2 CPU, 1.0 GiB memory, 4 TPU, 1 trainium; last heard") != std::string::npos);

  // Arguments joined by spaces, quoted only where a shell needs it (shlex.join).
  const std::string job_file = cluster.temp_dir() + "/argv.yaml";
  std::ofstream(job_file) << "name: argv\nworking_dir: " << cluster.temp_dir() << "\nworking_dir_mode: shared\n"
                          << "entrypoint: ['/bin/echo', 'build/examples/fashion_mnist', '--model', 'cnn', \"it's\", "
                             "'a b']\n";
  const std::string id = SubmittedJobId(cluster.Ctl({"submit", job_file, "--json"}));
  REQUIRE(WaitUntilFinal(cluster, id, std::chrono::seconds(60)).state() == SUCCEEDED);
  const std::string command_line = R"(/bin/echo build/examples/fashion_mnist --model cnn 'it'\''s' 'a b')";
  const std::string page = BrowserDom(cluster, base + "/job?id=" + id + "&token=" + token);
  INFO(page);
  CHECK(page.find("<td>" + command_line + "</td>") != std::string::npos);
  CHECK(cluster.Ctl({"job", id}).out.find(command_line + "\n") != std::string::npos);  // as `clusterctl job` prints it
}
