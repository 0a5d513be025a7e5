// Real training through the cluster: examples/fashion_mnist as a 2-rank job
// on a head and two workers, metrics read back with `clusterctl metrics`,
// and a rank SIGKILLed in epoch 3 of 5 resuming from the epoch-2 checkpoint.
#include <signal.h>

#include <catch2/catch.hpp>
#include <fstream>

#include "harness.h"
#include "job_json.h"

using namespace clusterd;
using namespace clusterd::testing;
using namespace std::chrono_literals;

namespace {

std::string StartTraining(Cluster& cluster, const std::string& model, int max_failures) {
  REQUIRE(cluster.StartHead({"--num-cpus", "1"}).exit_code == 0);
  REQUIRE(cluster.StartWorker("w1", {"--num-cpus", "1"}).exit_code == 0);
  REQUIRE(cluster.StartWorker("w2", {"--num-cpus", "1"}).exit_code == 0);
  std::string file = cluster.temp_dir() + "/fashion.yaml";
  std::ofstream(file) << "name: fashion-" << model << "\n"
                      << "entrypoint: [" << FASHION_MNIST_BIN << ", --model, " << model << ", --epochs, '5']\n"
                      << "working_dir: " << cluster.temp_dir() << "\nworking_dir_mode: shared\n"
                      << "num_workers: 2\nplacement: SPREAD\nmax_failures: " << max_failures << "\n"
                      << "env: {CTRAIN_NUM_THREADS: '1'}\n";
  RunResult submitted = cluster.Ctl({"submit", file, "--json"});
  INFO(submitted.err);
  REQUIRE(submitted.exit_code == 0);
  auto start = submitted.out.find("job-");
  REQUIRE(start != std::string::npos);
  return submitted.out.substr(start, submitted.out.find('"', start) - start);
}

JobInfo WaitEnd(Cluster& cluster, const std::string& id) {
  JobInfo job;
  REQUIRE(WaitFor([&] {
    job = ParseJson<JobInfo>(cluster.Ctl({"job", id, "--json"}));
    return job.state() == SUCCEEDED || job.state() == FAILED || job.state() == STOPPED;
  }, 20min, 1s));
  INFO(job.reason());
  REQUIRE(job.state() == SUCCEEDED);
  return job;
}

}  // namespace

TEST_CASE("fashion_mnist MLP through the cluster: >= 87% in 5 epochs, and a rank SIGKILLed in epoch 3 resumes from the epoch-2 checkpoint",
          "[train_cluster]") {
  Cluster cluster;
  std::string id = StartTraining(cluster, "mlp", 1);

  // Two epochs reported (epochs 1 and 2, each with its checkpoint): epoch 3 is under way.
  REQUIRE(WaitFor([&] { return ParseJson<MetricsReply>(cluster.Ctl({"metrics", id, "--json"})).records_size() >= 2; }, 10min, 250ms));
  JobInfo running = ParseJson<JobInfo>(cluster.Ctl({"job", id, "--json"}));
  pid_t victim = running.attempts(0).ranks(1).pid();
  REQUIRE(victim > 0);
  REQUIRE(kill(victim, SIGKILL) == 0);

  JobInfo job = WaitEnd(cluster, id);
  REQUIRE(job.attempts_size() == 2);
  REQUIRE(job.attempts(0).failure_reason().rfind("rank 1 was killed by signal 9", 0) == 0);
  REQUIRE(job.latest_checkpoint().find("checkpoint_000004") != std::string::npos);

  MetricsReply metrics = ParseJson<MetricsReply>(cluster.Ctl({"metrics", id, "--json"}));
  std::vector<MetricRecord> second;
  for (const auto& r : metrics.records()) {
    if (r.attempt() == 1) second.push_back(r);
  }
  REQUIRE_FALSE(second.empty());
  // Attempt 1 did not start over: its first epoch is the third (index 2) or later.
  INFO("attempt 1 started at epoch index " << MetricValue(second.front(), "epoch"));
  REQUIRE(MetricValue(second.front(), "epoch") >= 2);
  REQUIRE(MetricValue(second.back(), "epoch") == 4);
  double accuracy = MetricValue(second.back(), "accuracy");
  INFO("final MLP test accuracy " << accuracy);
  REQUIRE(accuracy >= 0.87);

  // The same numbers as a CSV for scripts.
  RunResult csv = cluster.Ctl({"metrics", id, "--csv"});
  REQUIRE(csv.exit_code == 0);
  REQUIRE(csv.out.rfind("attempt,index,unix_ms,", 0) == 0);
}

TEST_CASE("fashion_mnist CNN through the cluster reaches >= 90% in 5 epochs", "[train_cluster][slow]") {
  Cluster cluster;
  std::string id = StartTraining(cluster, "cnn", 0);
  JobInfo job = WaitEnd(cluster, id);
  MetricsReply metrics = ParseJson<MetricsReply>(cluster.Ctl({"metrics", id, "--json"}));
  REQUIRE(metrics.records_size() == 5);
  double accuracy = MetricValue(metrics.records(4), "accuracy");
  INFO("final CNN test accuracy " << accuracy);
  REQUIRE(accuracy >= 0.90);
}
