// tune_wall_bench: what ASHA saves. The Fashion-MNIST MLP sweep of the
// sweeps issue (lr loguniform x hidden grid, 12 trials, max_t 4 epochs)
// runs twice on the same loopback cluster (a head with no slots, workers of
// 2 and 1 CPU, as tests/integration/sweep_cluster_test.cc): under ASHA, then
// the same trials (same seed, so the same configurations) with no
// scheduler. The table gives ASHA's wall time against the no-scheduler run
// (target <= 0.5x) and both best accuracies (target: within 1 point).
// The wall time is the head's own: submit to the sweep's end.
#include <google/protobuf/util/json_util.h>

#include <csignal>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <string>

#include "flags.h"
#include "harness.h"
#include "report.h"

using namespace clusterd;
using namespace std::chrono_literals;

namespace {

const char* kUsage = "usage: tune_wall_bench [--samples N] [--epochs N] [--worker-cpus N] [--reduction-factor N]\n";

struct SweepRun {
  double wall_s = 0;
  double best = 0;     // the best trial's accuracy
  int early = 0;       // trials ASHA stopped
  int64_t epochs = 0;  // reports over every trial: the work done
  std::string best_params;
};

std::string SweepFile(testing::Cluster& cluster, const std::string& name, int samples, int epochs, int asha_rf) {
  std::string file = cluster.temp_dir() + "/" + name + ".yaml";
  std::ofstream out(file);
  out << "name: " << name << "\n"
      << "entrypoint: [" << FASHION_MNIST_BIN << ", --model, mlp, --epochs, '" << epochs
      << "', --lr, '{lr}', --hidden, '{hidden}']\n"
      << "working_dir: " << cluster.temp_dir() << "\nworking_dir_mode: shared\n"
      << "num_workers: 1\nmax_failures: 1\nenv: {CTRAIN_NUM_THREADS: '1'}\n"
      << "tune:\n  metric: accuracy\n  mode: max\n  num_samples: " << samples << "\n  seed: 7\n"
      << "  search_space:\n    lr: {loguniform: [1.0e-4, 1.0e-2]}\n    hidden: {grid: [128, 512]}\n";
  if (asha_rf > 0) {
    out << "  scheduler:\n    asha: {max_t: " << epochs << ", grace_period: 1, reduction_factor: " << asha_rf << "}\n";
  }
  return file;
}

bool ParseSweep(const std::string& json, SweepInfo* sweep) {
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  return google::protobuf::util::JsonStringToMessage(json, sweep, options).ok();
}

// Submits the sweep and waits for its end; false with *error when it could not.
bool RunSweep(testing::Cluster& cluster, const std::string& file, SweepRun* run, std::string* error) {
  testing::RunResult submitted = cluster.Ctl({"submit", file, "--json"});
  auto start = submitted.out.find("sweep-");
  if (submitted.exit_code != 0 || start == std::string::npos) {
    *error = "submit failed: " + submitted.err;
    return false;
  }
  const std::string id = submitted.out.substr(start, submitted.out.find('"', start) - start);
  SweepInfo sweep;
  bool over = testing::WaitFor([&] {
    testing::RunResult shown = cluster.Ctl({"sweep", id, "--json"});
    return shown.exit_code == 0 && ParseSweep(shown.out, &sweep) && sweep.state() != SWEEP_RUNNING;
  }, 3h, 2s);
  if (!over || sweep.state() != SWEEP_SUCCEEDED || sweep.best_trial() < 0) {
    *error = "sweep " + id + " did not succeed: " + sweep.reason();
    return false;
  }
  run->wall_s = (sweep.end_unix_ms() - sweep.submit_unix_ms()) / 1000.0;
  const TrialInfo& best = sweep.trials(sweep.best_trial());
  run->best = best.metric();
  for (const auto& [name, value] : best.params()) run->best_params += name + "=" + value + " ";
  for (const auto& trial : sweep.trials()) {
    run->early += trial.reason().find("early-stopped by ASHA") != std::string::npos;
    run->epochs += trial.iterations();
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);
  int samples = 6, epochs = 4, worker_cpus = 2, reduction_factor = 3;
  std::set<std::string> parts;
  if (!bench::ParseFlags(argc, argv, &parts,
                         {{"--samples", &samples},
                          {"--epochs", &epochs},
                          {"--worker-cpus", &worker_cpus},
                          {"--reduction-factor", &reduction_factor}})) {
    std::cerr << kUsage;
    return 2;
  }
  std::cerr << "tune_wall_bench: " << 2 * samples << " trials of " << epochs
            << " epochs, under ASHA (reduction factor " << reduction_factor
            << ") then with no scheduler (tens of minutes on 2 cores)" << std::endl;
  bench::Report report;
  testing::Cluster cluster;
  std::string error;
  if (cluster.StartHead({"--num-cpus", "0", "--num-gpus", "0"}).exit_code != 0 ||
      cluster.StartWorker("w1", {"--num-cpus", std::to_string(worker_cpus)}).exit_code != 0 ||
      cluster.StartWorker("w2", {"--num-cpus", "1"}).exit_code != 0) {
    report.Failed("cluster", "the loopback cluster did not start");
    std::cout << report.Format();
    return 1;
  }
  SweepRun asha, none;
  if (!RunSweep(cluster, SweepFile(cluster, "asha", samples, epochs, reduction_factor), &asha, &error)) {
    report.Failed("asha", error);
  } else if (!RunSweep(cluster, SweepFile(cluster, "none", samples, epochs, 0), &none, &error)) {
    report.Failed("no scheduler", error);
  } else {
    report.Check("sweep wall time under ASHA (x no scheduler)", asha.wall_s / none.wall_s, "x", 0.5,
                 std::nullopt, "");
    report.Info("sweep wall time under ASHA", asha.wall_s, "s", none.wall_s, "no scheduler");
    report.Check("best accuracy lost to ASHA", 100 * (none.best - asha.best), "points", 1.0, std::nullopt, "");
    report.Info("best accuracy under ASHA", 100 * asha.best, "%", 100 * none.best, "no scheduler");
    report.Info("trials stopped early by ASHA", asha.early, "", 2.0 * samples, "trials");
    report.Info("trial epochs run under ASHA", static_cast<double>(asha.epochs), "", static_cast<double>(none.epochs),
                "no scheduler");
    std::cerr << "best under ASHA: " << asha.best_params << "; with no scheduler: " << none.best_params << std::endl;
  }
  std::cout << report.Format();
  std::cout << "\n" << report.missed() << " target(s) MISSED" << std::endl;
  return report.any_failed() ? 1 : 0;
}
