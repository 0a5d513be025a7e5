// A hung attempt's diagnosis on the dashboard's job page, in real Chromium
// (devtools_page.h): a one-rank job whose attempt 0 prints lines, some of
// them markup, and then waits for ever is found hung (hang_timeout_s 2),
// and its diagnosis (wait channel, stacks, last lines) is shown under its
// attempt as text, collapsed because it is long, and stays as the user
// left it across the page's redraws.
#include <catch2/catch.hpp>

#include <fstream>
#include <string>

#include "devtools_page.h"
#include "harness.h"
#include "http_get.h"
#include "job_json.h"

using namespace clusterd;
using namespace clusterd::testing;
using namespace std::chrono_literals;

namespace {

// Attempt 0: 40 lines (markup among them), then a wait in a function the
// stack names. Attempt 1 ends at once.
constexpr const char* kHangingRank = R"(import os
import time

import clusterd  # in a rank: SIGQUIT prints every thread's stack

for i in range(40):
    print(f"line {i} <b id='injected'>bold</b> & <script>window.injected = 1</script>", flush=True)


def wait_for_lost_peer():
    time.sleep(1e9)


if os.environ["CLUSTER_ATTEMPT"] == "0":
    wait_for_lost_peer()
)";

}  // namespace

TEST_CASE("the job page shows a hung attempt's diagnosis under it, as text, collapsed when long",
          "[dashboard][browser][hang]") {
  Cluster cluster;
  const int port = FreePort();
  RunResult started = cluster.StartHead({"--num-cpus", "1", "--num-gpus", "0", "--dashboard-port",
                                         std::to_string(port), "--heartbeat-ms", "200"});
  INFO(started.err);
  REQUIRE(started.exit_code == 0);
  const std::string dir = cluster.temp_dir();
  std::ofstream(dir + "/hang.py") << kHangingRank;
  std::ofstream(dir + "/hang.yaml") << "name: hangs-once\nworking_dir: " << dir << "\nworking_dir_mode: shared\n"
                                    << "entrypoint: [/usr/bin/python3, hang.py]\nmax_failures: 1\n"
                                    << "hang_timeout_s: 2\nrestart_delay: {initial: 0}\n"
                                    << "env: {PYTHONDONTWRITEBYTECODE: '1'}\n";
  RunResult submitted = cluster.Ctl({"submit", dir + "/hang.yaml", "--json"});
  INFO(submitted.err);
  REQUIRE(submitted.exit_code == 0);
  const std::string id = SubmittedJobId(submitted);
  JobInfo job = WaitUntilFinal(cluster, id, 90s);
  INFO(job.DebugString());
  REQUIRE(job.state() == SUCCEEDED);
  REQUIRE(job.attempts_size() == 2);
  const std::string& diagnosis = job.attempts(0).hang_diagnosis();
  REQUIRE_THAT(diagnosis, Catch::Contains("in wait_for_lost_peer") && Catch::Contains("<script>"));
  REQUIRE(job.attempts(1).hang_diagnosis().empty());

  // The job JSON the page reads carries it.
  const std::string json = HttpGet(port, "/api/job?id=" + id, cluster.Token());
  CHECK_THAT(json, Catch::Contains("\"hang_diagnosis\"") && Catch::Contains("wait_for_lost_peer"));

  DevToolsPage page(dir + "/chromium");
  const std::string base = "http://127.0.0.1:" + std::to_string(port);
  page.Navigate(base + "/job?id=" + id + "&token=" + cluster.Token());
  auto query = [&](const std::string& expression) { return page.EvaluateString(expression); };
  const std::string box = "document.querySelector('details.hang-diagnosis')";
  REQUIRE(WaitFor([&] { return query("String(!!" + box + ")") == "true"; }, 20s, 200ms));
  // One, under attempt 0: the attempt that did not hang has none.
  CHECK(query("String(document.querySelectorAll('details.hang-diagnosis').length)") == "1");
  CHECK(query(box + ".dataset.attempt") == "0");
  CHECK_THAT(query(box + ".querySelector('summary').textContent"), Catch::StartsWith("Hang diagnosis of attempt 0 ("));
  // Word for word, as text: the rank's markup is not markup on the page.
  CHECK(query(box + ".querySelector('pre').textContent") == diagnosis);
  CHECK(query("String(document.getElementById('injected') === null && window.injected === undefined)") == "true");
  // Long: collapsed until opened, and opened it stays so when the page is
  // drawn again (every 2 s while the job runs; here by hand, as it ended).
  CHECK(query("String(" + box + ".open)") == "false");
  query("(" + box + ".querySelector('summary').click(), " + box + ".drawnBefore = true, '')");
  CHECK(query("String(" + box + ".open)") == "true");
  query("(window.redrawn = false, refresh().then(() => { window.redrawn = true; }), '')");
  REQUIRE(WaitFor([&] { return query("String(window.redrawn)") == "true"; }, 20s, 100ms));
  CHECK(query("String(" + box + ".drawnBefore === undefined)") == "true");  // a new element
  CHECK(query("String(" + box + ".open)") == "true");
  // A short one starts open.
  CHECK(query("String(hangDiagnosis({attempt: 7, hang_diagnosis: 'rank 0 on a: waits in futex_wait'}).open)") ==
        "true");
  CHECK(query("document.getElementById('err').textContent").empty());
  REQUIRE(cluster.Stop().exit_code == 0);
}
