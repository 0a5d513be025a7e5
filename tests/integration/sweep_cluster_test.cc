// Sweeps through a real cluster: 12 trials of the Fashion-MNIST MLP (lr
// loguniform x hidden grid) under ASHA on a head and two workers, followed
// with `clusterctl submit --follow`; then the same sweep across a head
// SIGKILL and restart. Both train dozens of epochs: [slow].
#include <signal.h>


#include <catch2/catch.hpp>
#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "harness.h"
#include "job_json.h"

using namespace clusterd;
using namespace clusterd::testing;
using namespace std::chrono_literals;

namespace {

std::string WriteSweep(Cluster& cluster) {
  std::string file = cluster.temp_dir() + "/sweep.yaml";
  std::ofstream(file) << "name: fmnist-sweep\n"
                      << "entrypoint: [" << FASHION_MNIST_BIN
                      << ", --model, mlp, --epochs, '4', --lr, '{lr}', --hidden, '{hidden}']\n"
                      << "working_dir: " << cluster.temp_dir() << "\nworking_dir_mode: shared\n"
                      << "num_workers: 1\nmax_failures: 1\nenv: {CTRAIN_NUM_THREADS: '1'}\n"
                      << "tune:\n  metric: accuracy\n  mode: max\n  num_samples: 6\n  seed: 7\n"
                      << "  search_space:\n    lr: {loguniform: [1.0e-4, 1.0e-2]}\n    hidden: {grid: [128, 512]}\n"
                      << "  scheduler:\n    asha: {max_t: 4, grace_period: 1, reduction_factor: 3}\n"
                      << "  best_params: results/best_params.yaml\n";
  return file;
}

// What every sweep of this file must show once it is over.
void CheckOutcome(Cluster& cluster, const SweepInfo& sweep) {
  INFO(sweep.DebugString());
  REQUIRE(sweep.state() == SWEEP_SUCCEEDED);
  REQUIRE(sweep.trials_size() == 12);
  int early = 0;
  for (const auto& t : sweep.trials()) {
    early += t.state() == TRIAL_EARLY_STOPPED;
    if (t.state() == TRIAL_EARLY_STOPPED) {
      REQUIRE(t.reason().rfind("early-stopped by ASHA at rung ", 0) == 0);
      JobInfo job = ParseJson<JobInfo>(cluster.Ctl({"job", t.job_id(), "--json"}));
      REQUIRE(job.state() == STOPPED);
      REQUIRE(job.reason() == t.reason());
    }
  }
  REQUIRE(early >= 4);  // at least a third
  REQUIRE(sweep.best_trial() >= 0);
  const TrialInfo& best = sweep.trials(sweep.best_trial());
  INFO("best trial " << best.index() << " accuracy " << best.metric());
  REQUIRE(best.metric() >= 0.87);
  // Each trial ran as one job: none was submitted twice.
  ListJobsReply jobs = ParseJson<ListJobsReply>(cluster.Ctl({"jobs", "--json"}));
  std::map<int, int> per_trial;
  for (const auto& job : jobs.jobs()) {
    if (job.spec().sweep_id() == sweep.sweep_id()) ++per_trial[job.spec().trial_index()];
  }
  REQUIRE(per_trial.size() == 12);
  for (const auto& [trial, count] : per_trial) REQUIRE(count == 1);
}

}  // namespace

TEST_CASE("a Fashion-MNIST MLP sweep under ASHA: a third stopped early, best >= 87%, best_params written",
          "[sweep_cluster][slow]") {
  Cluster cluster;
  REQUIRE(cluster.StartHead({"--num-cpus", "1"}).exit_code == 0);
  REQUIRE(cluster.StartWorker("w1", {"--num-cpus", "1"}).exit_code == 0);
  REQUIRE(cluster.StartWorker("w2", {"--num-cpus", "1"}).exit_code == 0);
  RunResult r = cluster.Ctl({"submit", WriteSweep(cluster), "--follow"}, 40min);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  const std::string prefix = "Submitted sweep ";
  REQUIRE(r.out.rfind(prefix, 0) == 0);
  const std::string id = r.out.substr(prefix.size(), r.out.find(' ', prefix.size()) - prefix.size());
  SweepInfo sweep = ParseJson<SweepInfo>(cluster.Ctl({"sweep", id, "--json"}));
  CheckOutcome(cluster, sweep);

  // best_params.yaml holds the best trial's parameters; trials.csv a row per trial.
  const TrialInfo& best = sweep.trials(sweep.best_trial());
  const std::string yaml = Slurp(cluster.temp_dir() + "/results/best_params.yaml");
  REQUIRE(yaml == "lr: " + best.params().at("lr") + "\nhidden: " + best.params().at("hidden") + "\n");
  const std::string csv = Slurp(cluster.temp_dir() + "/results/trials.csv");
  REQUIRE(csv.rfind("trial,job_id,state,lr,hidden,iterations,accuracy,reason\n", 0) == 0);
  REQUIRE(std::count(csv.begin(), csv.end(), '\n') == 13);
  // `clusterctl jobs` shows the trials under their sweep.
  RunResult jobs = cluster.Ctl({"jobs"});
  REQUIRE(jobs.out.find(id + "  fmnist-sweep ") != std::string::npos);
  REQUIRE(jobs.out.find("12 trials") != std::string::npos);
}

TEST_CASE("a sweep goes on across a head SIGKILL and restart without running finished trials again",
          "[sweep_cluster][slow]") {
  Cluster cluster;
  // The head runs no ranks, so trials live on the workers through its death.
  REQUIRE(cluster.StartHead({"--num-cpus", "0", "--num-gpus", "0"}).exit_code == 0);
  REQUIRE(cluster.StartWorker("w1", {"--num-cpus", "2"}).exit_code == 0);
  REQUIRE(cluster.StartWorker("w2", {"--num-cpus", "1"}).exit_code == 0);
  RunResult submitted = cluster.Ctl({"submit", WriteSweep(cluster), "--json"});
  INFO(submitted.err);
  REQUIRE(submitted.exit_code == 0);
  const auto start = submitted.out.find("sweep-");
  const std::string id = submitted.out.substr(start, submitted.out.find('"', start) - start);

  // Mid-sweep: a few trials over, others running.
  SweepInfo before;
  REQUIRE(WaitFor([&] {
    before = ParseJson<SweepInfo>(cluster.Ctl({"sweep", id, "--json"}));
    int over = 0;
    for (const auto& t : before.trials()) over += t.state() != TRIAL_WAITING && t.state() != TRIAL_ACTIVE;
    return over >= 4;
  }, 30min, 2s));
  cluster.KillHead();
  REQUIRE(cluster.StartHead({"--num-cpus", "0", "--num-gpus", "0"}).exit_code == 0);

  SweepInfo after;
  REQUIRE(WaitFor([&] {
    after = ParseJson<SweepInfo>(cluster.Ctl({"sweep", id, "--json"}));
    return after.state() != SWEEP_RUNNING;
  }, 30min, 2s));
  // Trials over before the kill kept their job and their end.
  for (const auto& t : before.trials()) {
    if (t.state() == TRIAL_WAITING || t.state() == TRIAL_ACTIVE) continue;
    REQUIRE(after.trials(t.index()).job_id() == t.job_id());
    REQUIRE(after.trials(t.index()).state() == t.state());
  }
  CheckOutcome(cluster, after);
}
