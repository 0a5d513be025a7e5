// The job page's metric charts in real Chromium, driven over DevTools
// (devtools_page.h) as a user would use them: against step by default when
// the reports carry it, against epoch, time or report index when chosen,
// a line per attempt with a legend, and the value under the pointer read
// out. A job whose reports carry no step says what it drew against instead.
#include <catch2/catch.hpp>
#include <fstream>
#include <regex>

#include "devtools_page.h"
#include "harness.h"
#include "job_json.h"
#include "report_module.h"

using namespace clusterd;
using namespace clusterd::testing;
using namespace std::chrono_literals;

namespace {

// JavaScript: the lines of chart `id` as "name:points;name:points".
std::string LinesOf(const std::string& id) {
  return "(() => { const c = document.querySelector('svg[data-chart=\"" + id + "\"]'); if (!c) return '';"
         " return [...c.querySelectorAll('path.series')].map(p => p.dataset.series + ':' +"
         " p.getAttribute('d').split(/[ML]/).filter(Boolean).length).join(';'); })()";
}
// JavaScript: the text of `selector` inside chart `id`'s box.
std::string TextIn(const std::string& id, const std::string& selector) {
  return "(() => { const e = document.querySelector('div[data-chart=\"" + id + "\"] " + selector +
         "'); return e ? e.textContent : ''; })()";
}
// JavaScript: picks `x` in the page's x chooser, as a user's choice does.
std::string ChooseX(const std::string& x) {
  return "(() => { const s = document.getElementById('metric-x'); s.value = '" + x +
         "'; s.dispatchEvent(new Event('change')); return s.value; })()";
}

}  // namespace

TEST_CASE("a job's metric charts: x chosen among step, epoch, time and report, a line per attempt, values on hover",
          "[dashboard][browser][charts]") {
  Cluster cluster;
  const int port = FreePort();
  REQUIRE(cluster.StartHead({"--num-cpus", "1", "--dashboard-port", std::to_string(port)}).exit_code == 0);
  const std::string dir = cluster.temp_dir();
  WriteReportModule(dir);
  // Attempt 0 reports three steps and fails; attempt 1 reports five.
  std::ofstream(dir + "/steps.py") <<
      "import os, time\n"
      "from ctrain_report import report\n"
      "attempt = int(os.environ['CLUSTER_ATTEMPT'])\n"
      "for i in range(3 if attempt == 0 else 5):\n"
      "    report({'step': 10 * (i + 1), 'epoch': i // 2, 'loss': attempt + 1.0 / (i + 1)})\n"
      "    time.sleep(0.3)\n"
      "raise SystemExit(1 if attempt == 0 else 0)\n";
  std::ofstream(dir + "/plain.py") <<
      "from ctrain_report import report\n"
      "for i in range(4):\n"
      "    report({'loss': 1.0 / (i + 1)})\n";
  auto submit = [&](const std::string& name, const std::string& script) {
    std::ofstream(dir + "/" + name + ".yaml") << "name: " << name << "\nworking_dir: " << dir
                                              << "\nworking_dir_mode: shared\nmax_failures: 1\n"
                                              << "entrypoint: [/usr/bin/python3, " << script << "]\n";
    RunResult submitted = cluster.Ctl({"submit", dir + "/" + name + ".yaml", "--json"});
    INFO(submitted.err);
    REQUIRE(submitted.exit_code == 0);
    return SubmittedJobId(submitted);
  };
  const std::string steps = submit("steps", "steps.py");
  const std::string plain = submit("plain", "plain.py");
  for (const std::string& id : {steps, plain}) {
    JobInfo job = WaitUntilFinal(cluster, id, 60s);
    INFO(job.reason());
    REQUIRE(job.state() == SUCCEEDED);
  }

  DevToolsPage page(dir + "/chromium");
  const std::string base = "http://127.0.0.1:" + std::to_string(port);
  page.Navigate(base + "/job?id=" + steps + "&token=" + cluster.Token());
  std::string lines;
  auto drawn = [&](const std::string& id, const std::string& want) {
    return WaitFor([&] { return (lines = page.EvaluateString(LinesOf(id))) == want; }, 20s, 100ms);
  };

  // By default against step, which the reports carry: a line per attempt,
  // as many points as each reported, named in the legend. Step is the axis,
  // not a chart of its own; epoch is a metric like loss.
  CHECK(drawn("metric-loss", "attempt 0:3;attempt 1:5"));
  INFO(lines);
  CHECK(page.EvaluateString(TextIn("metric-loss", ".x-label")) == "step");
  CHECK(page.EvaluateString(TextIn("metric-loss", ".legend")) == "attempt 0attempt 1");
  CHECK(page.EvaluateString(LinesOf("metric-step")).empty());
  CHECK(page.EvaluateString(LinesOf("metric-epoch")) == "attempt 0:3;attempt 1:5");
  // The two lines are told apart by colour.
  CHECK(page.EvaluateString("(() => { const s = [...document.querySelectorAll('svg[data-chart=\"metric-loss\"] "
                            "path.series')].map(p => p.getAttribute('stroke')); return s.length === 2 && s[0] !== s[1] "
                            "? 'apart' : s.join(); })()") == "apart");

  // The pointer on attempt 1's last point reads it out: its step and loss.
  const std::string at = page.EvaluateString(
      "(() => { const c = document.querySelector('svg[data-chart=\"metric-loss\"]'); c.scrollIntoView();"
      " const d = c.querySelector('path.series[data-series=\"attempt 1\"]').getAttribute('d');"
      " const [x, y] = d.split(/[ML]/).filter(Boolean).pop().trim().split(' ').map(Number);"
      " const r = c.getBoundingClientRect(); return (r.left + x) + ' ' + (r.top + y); })()");
  REQUIRE_FALSE(at.empty());
  page.MouseMove(std::stod(at.substr(0, at.find(' '))), std::stod(at.substr(at.find(' ') + 1)));
  CHECK(page.EvaluateString(TextIn("metric-loss", ".readout")) == "attempt 1: step 50, loss 1.2");
  CHECK(page.EvaluateString("document.querySelector('svg[data-chart=\"metric-loss\"] .hover-ring')"
                            ".getAttribute('visibility')") == "visible");
  // Away from the chart, the readout goes.
  page.MouseMove(1, 1);
  CHECK(page.EvaluateString(TextIn("metric-loss", ".readout")) == "\u00a0");

  // Against epoch: the axis says so, the lines change shape (epochs 0, 0, 1,
  // 1, 2), epoch is no chart and step is one; the choice is in the address.
  const std::string by_step = page.EvaluateString(
      "document.querySelector('svg[data-chart=\"metric-loss\"] path.series[data-series=\"attempt 1\"]').getAttribute('d')");
  CHECK(page.EvaluateString(ChooseX("epoch")) == "epoch");
  CHECK(page.EvaluateString(TextIn("metric-loss", ".x-label")) == "epoch");
  CHECK(page.EvaluateString("document.querySelector('svg[data-chart=\"metric-loss\"] path.series[data-series=\"attempt "
                            "1\"]').getAttribute('d')") != by_step);
  CHECK(page.EvaluateString(LinesOf("metric-epoch")).empty());
  CHECK(page.EvaluateString(LinesOf("metric-step")) == "attempt 0:3;attempt 1:5");
  CHECK(page.EvaluateString("location.search").find("x=epoch") != std::string::npos);

  // Against time: the ticks are times of day.
  CHECK(page.EvaluateString(ChooseX("time")) == "time");
  CHECK(page.EvaluateString(TextIn("metric-loss", ".x-label")) == "time");
  const std::string tick = page.EvaluateString(
      "document.querySelector('svg[data-chart=\"metric-loss\"] .x-label').previousElementSibling.textContent");
  INFO(tick);
  CHECK(std::regex_match(tick, std::regex("[0-9]{2}:[0-9]{2}:[0-9]{2}")));
  CHECK(page.EvaluateString(LinesOf("metric-loss")) == "attempt 0:3;attempt 1:5");

  // Against report index: each attempt counts from 0.
  CHECK(page.EvaluateString(ChooseX("report")) == "report");
  CHECK(page.EvaluateString(TextIn("metric-loss", ".x-label")) == "report");
  CHECK(page.EvaluateString("document.querySelector('svg[data-chart=\"metric-loss\"] .x-label')"
                            ".previousElementSibling.textContent") == "4");

  // A job whose reports carry no step, asked for step: drawn against the
  // report index, and the chart says so.
  page.Navigate(base + "/job?id=" + plain + "&x=step");
  CHECK(drawn("metric-loss", "attempt 0:4"));
  CHECK(page.EvaluateString(TextIn("metric-loss", ".x-label")) == "report");
  CHECK(page.EvaluateString(TextIn("metric-loss", ".note")) ==
        "No report carries \"step\": drawn against the report index (report() calls of each attempt, from 0).");
  CHECK(page.EvaluateString(TextIn("metric-loss", ".legend")).empty());  // one line: no legend
  CHECK(page.EvaluateString("document.getElementById('err').textContent").empty());
}
