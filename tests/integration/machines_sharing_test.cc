// The sharing layer where it spans machines (docs/SHARING.md), on simulated
// machines that share nothing but the network: a low-priority Python job
// that checkpoints each epoch is preempted by a high-priority job that
// needs every worker; the high-priority job's ranks run within the
// victim's grace plus 1 s of its submit; while it runs, the victim's
// machines are drained, so that the victim resumes from its stored
// checkpoint on the other two machines (which never saw it), and it
// SUCCEEDS with max_failures: 0, every epoch reported exactly once.
#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <fmt/format.h>

#include "checkpointing_trainer.h"
#include "job_json.h"
#include "machines.h"
#include "machines_cluster.h"

namespace fs = std::filesystem;

using namespace clusterd;
using namespace clusterd::testing;
using namespace std::chrono_literals;

TEST_CASE("machines: a preempted job resumes from its stored checkpoint on other machines and succeeds with "
          "max_failures 0",
          "[machines][sharing_machines]") {
  REQUIRE_SIM_NETWORK();
  HeadWorkersClient cluster(/*worker_count=*/4, /*cpus=*/1);
  Machine& client = cluster.client;
  auto ctl = [&](const std::string& args) { return client.Shell("cd /tmp/project && clusterctl " + args, cluster.env, 60s); };
  auto job = [&](const std::string& id) { return ParseJson<JobInfo>(ctl("job " + id + " --json")); };
  auto submit = [&](const std::string& file) {
    RunResult submitted = ctl("submit " + file + " --json");
    INFO(submitted.out << submitted.err);
    REQUIRE(submitted.exit_code == 0);
    return SubmittedJobId(submitted);
  };

  // Only the client has the trainer: its folder is shipped as the job's working_dir.
  constexpr int kEpochs = 8;
  constexpr int kGraceS = 5;
  fs::create_directories(client.HostPath("/tmp/project"));
  std::ofstream(client.HostPath("/tmp/project/trainer.py")) << kCheckpointingTrainer;
  std::ofstream(client.HostPath("/tmp/project/low.yaml"))
      << fmt::format("name: low\nworking_dir: .\nentrypoint: [/usr/bin/python3, trainer.py, '{}']\nnum_workers: 2\n"
                     "placement: STRICT_SPREAD\nresources_per_worker: {{CPU: 1}}\nmax_failures: 0\npriority: 0\n"
                     "preemption_grace_s: {}\n",
                     kEpochs, kGraceS);
  std::ofstream(client.HostPath("/tmp/project/high.yaml"))
      << "name: high\nworking_dir: .\nentrypoint: sleep 4\nnum_workers: 4\nplacement: STRICT_SPREAD\n"
         "resources_per_worker: {CPU: 1}\npriority: 10\n";

  const std::string low = submit("low.yaml");
  JobInfo victim;
  REQUIRE(WaitFor([&] {
    victim = job(low);
    return victim.stored_checkpoints_size() > 0 && victim.stored_checkpoints().rbegin()->epoch() >= 1;
  }, 3min, 200ms));
  REQUIRE(victim.attempts_size() == 1);
  std::set<std::string> first_machines;
  for (const RankInfo& rank : victim.attempts(0).ranks()) first_machines.insert(rank.node_name());
  REQUIRE(first_machines.size() == 2);

  const auto submitted = std::chrono::steady_clock::now();
  const std::string high = submit("high.yaml");
  REQUIRE(WaitFor([&] {
    const JobInfo urgent = job(high);
    if (urgent.attempts_size() == 0 || urgent.attempts(0).ranks_size() != 4) return false;
    for (const RankInfo& rank : urgent.attempts(0).ranks()) {
      if (rank.pid() <= 0) return false;
    }
    return true;
  }, 60s, 20ms));
  const auto waited_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - submitted).count();
  INFO("the high-priority job's ranks ran " << waited_ms << " ms after its submit");
  CHECK(waited_ms <= kGraceS * 1000 + 1000);

  // While the high-priority job runs, the victim's machines take no new work.
  for (const std::string& name : first_machines) {
    RunResult drained = ctl("drain " + name);
    INFO(drained.out << drained.err);
    REQUIRE(drained.exit_code == 0);
  }
  victim = job(low);
  CHECK(victim.preemptions() == 1);
  CHECK(victim.attempts(0).preempted_by() == high);

  JobInfo done;
  REQUIRE(WaitFor([&] {
    done = job(low);
    return done.state() == SUCCEEDED || done.state() == FAILED || done.state() == STOPPED;
  }, 4min, 500ms));
  INFO(done.reason() << "\n" << ctl("logs " + low).out);
  REQUIRE(done.state() == SUCCEEDED);
  CHECK(job(high).state() == SUCCEEDED);
  REQUIRE(done.attempts_size() == 2);
  CHECK(done.attempts(0).failure_reason().empty());
  CHECK(done.preemptions() == 1);
  // Resumed from what it stored on notice, on the two machines it had not run on.
  for (const RankInfo& rank : done.attempts(1).ranks()) {
    INFO(rank.node_name());
    CHECK(first_machines.count(rank.node_name()) == 0);
  }
  // Every epoch ended exactly once across both attempts: nothing was re-run.
  const MetricsReply metrics = ParseJson<MetricsReply>(ctl("metrics " + low + " --json"));
  std::map<int, int> epochs_done;
  std::string stored_on_notice;
  for (const MetricRecord& record : metrics.records()) {
    auto found = record.values().find("epoch_done");
    if (found != record.values().end()) ++epochs_done[static_cast<int>(found->second)];
    if (record.attempt() == 0 && record.values().count("saved_at_step")) stored_on_notice = record.checkpoint();
  }
  REQUIRE_FALSE(stored_on_notice.empty());
  CHECK(fs::path(stored_on_notice).filename() == done.attempts(1).restored_checkpoint());
  CHECK(epochs_done.size() == static_cast<size_t>(kEpochs));
  for (const auto& [epoch, times] : epochs_done) {
    INFO("epoch " << epoch);
    CHECK(times == 1);
  }
  cluster.StopDaemons();
}
