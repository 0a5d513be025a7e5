// Hung gangs (docs/RELIABILITY.md "Hung gangs") on simulated machines: a
// 2-rank Python gang, one rank on each worker, whose ranks print a line and
// then wait for ever in attempt 0. With hang_timeout_s 3 the head finds it
// hung, the nodes read each rank's wait channel and send SIGQUIT (the
// clusterd package prints the Python stack), the attempt fails as hung
// and the next one starts within hang_timeout_s + 2 s of the ranks' last
// line; it does not wait, and the job SUCCEEDS. `clusterctl job` says why.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include "job_json.h"
#include "machines.h"
#include "machines_cluster.h"

using namespace clusterd;
using namespace clusterd::testing;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

// Attempt 0 waits in a function whose name the stack must show.
constexpr const char* kHangingRank = R"(import os
import time

import clusterd  # in a rank: SIGQUIT prints every thread's stack

attempt = int(os.environ["CLUSTER_ATTEMPT"])
print(f"rank {os.environ['RANK']} attempt {attempt} last activity at {time.time():.3f}", flush=True)


def wait_for_lost_peer():
    time.sleep(1e9)


if attempt == 0:
    wait_for_lost_peer()
print("done", flush=True)
)";

}  // namespace

TEST_CASE("machines: a hung 2-rank gang is diagnosed and restarted within hang_timeout_s + 2 s, then succeeds",
          "[machines][hang_machines]") {
  REQUIRE_SIM_NETWORK();
  SimCluster cluster(/*head_cpus=*/0);
  fs::create_directories(cluster.client.HostPath("/tmp/job"));
  std::ofstream(cluster.client.HostPath("/tmp/job/hang.py")) << kHangingRank;
  std::ofstream(cluster.client.HostPath("/tmp/job/hang.yaml"))
      << "name: hangs-once\nentrypoint: [/usr/bin/python3, hang.py]\nworking_dir: .\n"
         "num_workers: 2\nplacement: STRICT_SPREAD\nmax_failures: 1\nhang_timeout_s: 3\n"
         "restart_delay: {initial: 0}\nenv: {PYTHONDONTWRITEBYTECODE: '1'}\n";

  RunResult submitted = cluster.Ctl("submit hang.yaml --json");
  const std::string id = SubmittedJobId(submitted);
  JobInfo job = cluster.WaitUntilFinal(id, 2min);
  INFO(job.DebugString());
  REQUIRE(job.state() == SUCCEEDED);
  REQUIRE(job.attempts_size() == 2);
  const AttemptInfo& hung = job.attempts(0);
  REQUIRE_THAT(hung.failure_reason(),
               Catch::StartsWith("attempt 0 hung: no rank printed, reported or used CPU for 3 s (hang_timeout_s 3); "
                                 "rank 0 waits in "));
  REQUIRE_THAT(hung.failure_reason(), Catch::Contains("rank 1 waits in "));
  // Both ranks' Python stacks, through faulthandler, with the function they wait in.
  const std::string& diagnosis = hung.hang_diagnosis();
  REQUIRE_THAT(diagnosis, Catch::Contains("rank 0 on w") && Catch::Contains("rank 1 on w"));
  REQUIRE_THAT(diagnosis, Catch::Contains("SIGQUIT to 1 Python process"));
  size_t stacks = 0;
  for (size_t at = diagnosis.find("in wait_for_lost_peer"); at != std::string::npos;
       at = diagnosis.find("in wait_for_lost_peer", at + 1)) {
    ++stacks;
  }
  REQUIRE(stacks == 2);
  REQUIRE_THAT(diagnosis, Catch::Contains("kernel stack:"));

  // The ranks' last activity: their lines, as the diagnosis quotes them.
  double last_activity = 0;
  const std::regex line(R"(attempt 0 last activity at ([0-9.]+))");
  for (auto it = std::sregex_iterator(diagnosis.begin(), diagnosis.end(), line); it != std::sregex_iterator(); ++it) {
    last_activity = std::max(last_activity, std::stod((*it)[1].str()));
  }
  REQUIRE(last_activity > 0);
  const double restarted = static_cast<double>(job.attempts(1).start_unix_ms()) / 1000;
  INFO("attempt 1 started " << restarted - last_activity << " s after the ranks' last activity");
  REQUIRE(restarted - last_activity >= 3);
  REQUIRE(restarted - last_activity <= 3 + 2);

  // clusterctl job says why, and shows the diagnosis.
  RunResult shown = cluster.Ctl("job " + id);
  INFO(shown.out << shown.err);
  REQUIRE(shown.exit_code == 0);
  REQUIRE_THAT(shown.out, Catch::Contains("failure: attempt 0 hung: no rank printed, reported or used CPU for 3 s"));
  REQUIRE_THAT(shown.out, Catch::Contains("hang diagnosis:"));
  REQUIRE_THAT(shown.out, Catch::Contains("in wait_for_lost_peer"));
}
