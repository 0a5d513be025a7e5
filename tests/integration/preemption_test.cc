// Preemption on a real cluster (docs/SHARING.md "Preemption"): a
// low-priority Python job that checkpoints each epoch, and on notice, is
// preempted by a high-priority job that needs its room. The high-priority
// job's ranks run within the victim's grace plus 1 s of its submit; the
// victim resumes from its stored checkpoint and SUCCEEDS with
// max_failures: 0, no epoch run twice.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include <fmt/format.h>

#include "checkpointing_trainer.h"
#include "http_get.h"
#include "jobs_harness.h"

using namespace clusterd;
using namespace clusterd::testing;

namespace {

// Lines "epoch N done" of the trainer's log, each with how often it appears.
std::map<std::string, int> EpochsDone(const std::string& log) {
  std::map<std::string, int> done;
  std::istringstream lines(log);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("epoch ", 0) == 0) ++done[line];
  }
  return done;
}

}  // namespace

TEST_CASE("a high-priority job preempts a low-priority one, which resumes from the checkpoint it stored on notice "
          "and succeeds",
          "[preemption][python]") {
  Cluster cluster;
  const int dashboard = FreePort();
  REQUIRE(cluster
              .StartHead({"--num-cpus", "2", "--num-gpus", "0", "--heartbeat-ms", "200", "--dashboard-port",
                          std::to_string(dashboard)})
              .exit_code == 0);
  const std::string script = cluster.temp_dir() + "/trainer.py";
  std::ofstream(script) << kCheckpointingTrainer;
  const std::string log = cluster.temp_dir() + "/epochs.log";
  constexpr int kEpochs = 12;  // 12 s of training: without preemption the other job would wait ~10 s
  constexpr double kGraceS = 5;
  const std::string low = Submit(
      cluster, WriteJobFile(cluster, "low",
                            fmt::format("entrypoint: [/usr/bin/python3, {}, '{}', {}]\n"
                                        "resources_per_worker: {{CPU: 2}}\nmax_failures: 0\npriority: 0\n"
                                        "preemption_grace_s: {}\n",
                                        script, kEpochs, log, kGraceS)));
  // Two epochs stored: the victim has work to lose.
  REQUIRE(WaitFor(
      [&] {
        JobInfo job = GetJob(cluster, low);
        return job.stored_checkpoints_size() > 0 && job.stored_checkpoints().rbegin()->epoch() >= 1;
      },
      60s));

  const auto submitted = std::chrono::steady_clock::now();
  const std::string high = Submit(
      cluster, WriteJobFile(cluster, "high", "entrypoint: sleep 2\nresources_per_worker: {CPU: 2}\npriority: 10\n"));
  REQUIRE(WaitFor(
      [&] {
        JobInfo job = GetJob(cluster, high);
        return job.attempts_size() > 0 && job.attempts(0).ranks_size() > 0 && job.attempts(0).ranks(0).pid() > 0;
      },
      30s, 20ms));
  const int64_t waited_ms = MillisSince(submitted);
  INFO("the high-priority job's ranks ran " << waited_ms << " ms after its submit");
  CHECK(waited_ms <= static_cast<int64_t>(kGraceS * 1000) + 1000);

  JobInfo victim = GetJob(cluster, low);
  CHECK(victim.preemptions() == 1);
  REQUIRE(victim.attempts_size() >= 1);
  CHECK(victim.attempts(0).preempted_by() == high);

  JobInfo done = WaitEnd(cluster, low, 90s);
  INFO(done.reason() << "\n" << Slurp(log));
  REQUIRE(done.state() == SUCCEEDED);
  CHECK(WaitEnd(cluster, high).state() == SUCCEEDED);
  REQUIRE(done.attempts_size() == 2);
  CHECK(done.attempts(0).preempted_by() == high);
  CHECK(done.attempts(0).failure_reason().empty());
  // Resumed from the checkpoint stored on notice: the last one attempt 0 stored.
  CHECK_FALSE(done.attempts(1).restored_checkpoint().empty());
  const std::string text = Slurp(log);
  CHECK(text.find("attempt 0 saved on notice") != std::string::npos);
  // Every epoch ran to its end exactly once: nothing was lost to the preemption.
  std::map<std::string, int> epochs = EpochsDone(text);
  CHECK(epochs.size() == static_cast<size_t>(kEpochs));
  for (const auto& [epoch, times] : epochs) {
    INFO(epoch);
    CHECK(times == 1);
  }
  // clusterctl job says so, the dashboard shows it, and Prometheus counts it.
  RunResult shown = cluster.Ctl({"job", low});
  CHECK_THAT(shown.out, Catch::Contains("preempted: by " + high));
  CHECK_THAT(shown.out, Catch::Contains("1 preempted, not counted"));
  CHECK_THAT(shown.out, Catch::Contains("resumed from " + done.attempts(1).restored_checkpoint() + " in attempt 1"));
  CHECK_THAT(HttpGet(dashboard, "/metrics", cluster.Token()), Catch::Contains("clusterd_preemptions_total 1"));
  const std::string chromium = "/usr/bin/chromium-headless-shell";
  REQUIRE(access(chromium.c_str(), X_OK) == 0);  // package chromium-headless-shell (scripts/lib.sh installs it)
  RunResult page = Run({chromium, "--no-sandbox", "--disable-gpu", "--user-data-dir=" + cluster.temp_dir() + "/chromium",
                        "--virtual-time-budget=6000", "--dump-dom",
                        fmt::format("http://127.0.0.1:{}/job?id={}&token={}", dashboard, low, cluster.Token())});
  REQUIRE(page.exit_code == 0);
  INFO(page.out);
  CHECK_THAT(page.out, Catch::Contains("1 preemption, not counted against max_failures"));
  CHECK_THAT(page.out, Catch::Contains(">" + high + "</a> at "));
  CHECK_THAT(page.out, Catch::Contains("<td>" + done.attempts(1).restored_checkpoint() + "</td>"));
  REQUIRE(cluster.Stop().exit_code == 0);
}
