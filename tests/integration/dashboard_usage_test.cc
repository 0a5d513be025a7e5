// The pages of use over time in real Chromium (devtools_page.h), from the
// head's usage history: a node's page with its CPU busy share, memory and each GPU's
// use, the cluster page's totals, and on a job's page the node its rank ran
// on with the GPU it held. GPUs come from a stand-in nvidia-smi, as in
// gpu_health_test.cc. With DASHBOARD_SCREENSHOTS=docs/images it retakes
// the pictures of the job, node and cluster pages (docs/DASHBOARD.md).
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>

#include "devtools_page.h"
#include "harness.h"
#include "http_get.h"
#include "stand_in_nvidia_smi.h"
#include "job_json.h"
#include "report_module.h"

using namespace clusterd;
using namespace clusterd::testing;
using namespace std::chrono_literals;

namespace {

// Two GPUs whose use moves with the clock, so that their lines are lines.
constexpr const char* kQueryGpu = R"(t=$(( 1$(date +%N | cut -c1-3) - 1000 ))  # milliseconds; the 1 keeps a leading 0 from reading as octal
echo "0, 00000000:18:00.0, $(( 40 + t % 60 )), $(( 20000 + t * 20 )), 81559, 0, No"
echo "1, 00000000:3B:00.0, $(( t % 30 )), $(( 4000 + t * 5 )), 81559, 0, No"
)";

// JavaScript: the lines of chart `id` as "name:points;name:points".
std::string LinesOf(const std::string& id) {
  return "(() => { const c = document.querySelector('svg[data-chart=\"" + id + "\"]'); if (!c) return '';"
         " return [...c.querySelectorAll('path.series')].map(p => p.dataset.series + ':' +"
         " p.getAttribute('d').split(/[ML]/).filter(Boolean).length).join(';'); })()";
}

// The names of the lines in `lines` (LinesOf), each with at least `points`.
std::string NamesWithPoints(const std::string& lines, int points) {
  std::string names;
  for (size_t at = 0; at < lines.size();) {
    size_t end = lines.find(';', at);
    if (end == std::string::npos) end = lines.size();
    const std::string one = lines.substr(at, end - at);
    const size_t colon = one.rfind(':');
    if (colon != std::string::npos && std::atoi(one.c_str() + colon + 1) >= points) {
      names += (names.empty() ? "" : ",") + one.substr(0, colon);
    }
    at = end + 1;
  }
  return names;
}

// A picture of the page from the element `from` down, into
// $DASHBOARD_SCREENSHOTS when set.
void Picture(DevToolsPage& page, const std::string& name, const std::string& from) {
  const char* dir = getenv("DASHBOARD_SCREENSHOTS");
  if (!dir) return;
  page.MouseMove(1, 1);  // no readout left over from the checks
  page.EvaluateString("(document.querySelector('" + from + "').scrollIntoView(), '')");
  page.Screenshot(std::string(dir) + "/dashboard-" + name + ".png");
}

}  // namespace

TEST_CASE("node, cluster and job pages chart use over time from the head's usage history",
          "[dashboard][browser][usage]") {
  Cluster cluster;
  const std::string dir = cluster.temp_dir();
  const std::string bin = dir + "/stand-in";
  WriteStandInNvidiaSmi(bin, kQueryGpu);

  const int port = FreePort();
  RunResult started = cluster.StartHead({"--num-cpus", "1", "--num-gpus", "0", "--dashboard-port",
                                         std::to_string(port), "--usage-history-interval-ms", "200",
                                         "--heartbeat-ms", "100"});
  INFO(started.err);
  REQUIRE(started.exit_code == 0);
  RunResult joined = Run({CLUSTERD_BIN, "start", "--address", cluster.address(), "--temp-dir", dir, "--node-name",
                          "gpu1", "--num-cpus", "2", "--gpu-probe-interval-ms", "100", "--heartbeat-ms", "100"},
                         {{"PATH", bin + ":" + std::string(getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin")}});
  INFO(joined.err);
  REQUIRE(joined.exit_code == 0);
  const std::string token = cluster.Token();

  // A one-GPU job on gpu1 that reports for a few seconds.
  WriteReportModule(dir);
  std::ofstream(dir + "/train.py") <<
      "import time\n"
      "from ctrain_report import report\n"
      "for step in range(1, 13):\n"
      "    report({'step': step * 100, 'loss': 2.0 / step, 'accuracy': 1 - 0.5 / step})\n"
      "    time.sleep(0.25)\n";
  std::ofstream(dir + "/train.yaml") << "name: train-on-gpu\nworking_dir: " << dir << "\nworking_dir_mode: shared\n"
                                     << "resources_per_worker: {GPU: 1}\n"
                                     << "entrypoint: [/usr/bin/python3, train.py]\n";
  RunResult submitted = cluster.Ctl({"submit", dir + "/train.yaml", "--json"});
  INFO(submitted.err);
  REQUIRE(submitted.exit_code == 0);
  const std::string id = SubmittedJobId(submitted);
  JobInfo job = WaitUntilFinal(cluster, id, 60s);
  INFO(job.reason());
  REQUIRE(job.state() == SUCCEEDED);
  REQUIRE(job.attempts(0).ranks(0).node_name() == "gpu1");
  REQUIRE(job.attempts(0).ranks(0).gpus_size() == 1);
  const std::string held = "GPU " + std::to_string(job.attempts(0).ranks(0).gpus(0));
  const std::string node_id = job.attempts(0).ranks(0).node_id();

  DevToolsPage page(dir + "/chromium");
  page.SetWindowSize(1000, 700);
  const std::string base = "http://127.0.0.1:" + std::to_string(port);
  std::string lines;
  // Chart `id` has lines `names` (comma-separated), each of `points` or more.
  auto charted = [&](const std::string& id, const std::string& names, int points) {
    return WaitFor([&] { return NamesWithPoints(lines = page.EvaluateString(LinesOf(id)), points) == names; }, 20s,
                   200ms);
  };

  // The job: its metrics, and beside them the node its rank ran on, with
  // its CPU and memory and the one GPU the rank held, over the job's time.
  page.Navigate(base + "/job?id=" + id + "&token=" + token);
  CHECK(charted("metric-loss", "attempt 0", 12));
  const std::string use = "use-" + node_id + "-";
  // CPU: the busy share the agent measured from /proc/stat, not the load.
  CHECK(charted(use + "cpu", "busy", 5));
  INFO(lines);
  CHECK(charted(use + "memory", "memory", 5));
  CHECK(charted(use + "gpu-utilization", held, 5));
  CHECK(charted(use + "gpu-memory", held, 5));
  const std::string heading = page.EvaluateString("document.querySelector('#node-use h3').textContent");
  CHECK(heading == "Node gpu1: rank 0, " + held);
  Picture(page, "job", "#metrics");

  // The node: its use since the head began keeping it, both GPUs.
  page.Navigate(base + "/node?id=gpu1");
  CHECK(charted("node-cpu", "busy", 10));
  CHECK(charted("node-memory", "memory", 10));
  CHECK(charted("node-gpu-utilization", "GPU 0,GPU 1", 10));
  CHECK(charted("node-gpu-memory", "GPU 0,GPU 1", 10));
  CHECK(charted("node-ranks", "ranks", 10));
  CHECK(page.EvaluateString("document.querySelector('h1').textContent") == "Node gpu1");
  // The pointer on the GPU chart reads out a GPU, a time and a percentage.
  const std::string at = page.EvaluateString(
      "(() => { const c = document.querySelector('svg[data-chart=\"node-gpu-utilization\"]'); c.scrollIntoView();"
      " const d = c.querySelector('path.series[data-series=\"GPU 0\"]').getAttribute('d');"
      " const [x, y] = d.split(/[ML]/).filter(Boolean)[3].trim().split(' ').map(Number);"
      " const r = c.getBoundingClientRect(); return (r.left + x) + ' ' + (r.top + y); })()");
  REQUIRE_FALSE(at.empty());
  page.MouseMove(std::stod(at.substr(0, at.find(' '))), std::stod(at.substr(at.find(' ') + 1)));
  const std::string readout =
      page.EvaluateString("document.querySelector('div[data-chart=\"node-gpu-utilization\"] .readout').textContent");
  INFO(readout);
  CHECK(readout.rfind("GPU 0: time ", 0) == 0);
  CHECK(readout.find(", utilisation ") != std::string::npos);
  CHECK(readout.back() == '%');
  Picture(page, "node", "body");

  // The cluster: totals over time above the node table, which links each node's page.
  page.Navigate(base + "/");
  CHECK(charted("cluster-cpu", "busy", 10));
  CHECK(charted("cluster-memory", "memory", 10));
  CHECK(charted("cluster-gpu-utilization", "mean", 10));
  CHECK(charted("cluster-gpu-memory", "memory", 10));
  CHECK(charted("cluster-counts", "nodes alive,running ranks", 10));
  CHECK(page.EvaluateString("document.getElementById('nodes').innerText").find("ALIVE (2)") == 0);  // GPUs healthy
  CHECK(page.EvaluateString("[...document.querySelectorAll('#nodes a')].map(a => a.getAttribute('href')).sort().join()")
            .find("/node?id=" + node_id) != std::string::npos);
  Picture(page, "cluster", "#nodes");
  // Samples without the busy share (agents that do not measure it) are
  // charted as the load average against the CPUs, titled so.
  CHECK(page.EvaluateString("(() => { const b = cpuChart('fallback', [{t_unix_ms: 1000, cpu_load: 0.5, cpu_utilization: null},"
                            " {t_unix_ms: 2000, cpu_load: 1.5}], 2, {}); return b.querySelector('.title').textContent + ': ' +"
                            " [...b.querySelectorAll('path.series')].map(p => p.dataset.series).join(); })()") ==
        "CPU load: load");
  CHECK(page.EvaluateString("cpuChart('measured', [{t_unix_ms: 1000, cpu_load: 0.5, cpu_utilization: 0.25}], 2, {})"
                            ".querySelector('.title').textContent") == "CPU utilisation");
  CHECK(page.EvaluateString("document.getElementById('err').textContent").empty());
}

TEST_CASE("without a usage history the pages say so and draw the rest", "[dashboard][browser][usage]") {
  Cluster cluster;
  const int port = FreePort();
  REQUIRE(cluster.StartHead({"--num-cpus", "1", "--dashboard-port", std::to_string(port), "--usage-history-window-s",
                             "0"})
              .exit_code == 0);
  DevToolsPage page(cluster.temp_dir() + "/chromium");
  const std::string base = "http://127.0.0.1:" + std::to_string(port);
  page.Navigate(base + "/?token=" + cluster.Token());
  std::string text;
  auto shown = [&](const std::string& what) {
    return WaitFor([&] { return (text = page.EvaluateString("document.body.innerText")).find(what) != std::string::npos; },
                   20s, 200ms);
  };
  CHECK(shown("ALIVE (1)"));
  // The cluster's chart comes from a fetch of its own (/api/usage/cluster),
  // which may answer after the node table's.
  CHECK(shown("No history yet"));
  INFO(text);
  page.Navigate(base + "/node?id=" + cluster.Status().nodes(0).name());
  CHECK(shown("No history yet"));
  CHECK(page.EvaluateString("document.getElementById('err').textContent").empty());
}
