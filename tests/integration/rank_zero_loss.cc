#include "rank_zero_loss.h"

#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "common/file_util.h"
#include "job_json.h"

namespace clusterd::testing {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

void RunRankZeroLoss(const RankZeroLossCluster& cluster) {
  SimNetwork& net = *cluster.net;
  Machine& client = *cluster.client;
  const std::vector<Machine*>& workers = cluster.workers;
  const std::map<std::string, std::string>& env = cluster.env;
  auto ctl = [&](const std::string& args, std::chrono::milliseconds timeout = 30s) {
    return client.Shell("cd /tmp/job && clusterctl " + args, env, timeout);
  };

  fs::create_directories(client.HostPath("/tmp/job"));
  fs::copy_file(FASHION_MNIST_BIN, client.HostPath("/tmp/job/fashion_mnist"));
  std::ofstream(client.HostPath("/tmp/job/train.yaml"))
      << "name: mnist-mlp\n"
      << "entrypoint: [./fashion_mnist, --model, mlp, --epochs, '3', --batch-size, '128', --save-model, model.pt]\n"
      << "working_dir: .\nnum_workers: 2\nplacement: STRICT_SPREAD\nmax_failures: 1\n"
      << "dvclive: dvclive\noutputs: [model.pt]\nenv: {CTRAIN_NUM_THREADS: '1'}\n";

  // --follow runs on the client the whole time, as a DVC stage would.
  std::string out_path = net.prefix() + "follow.out", err_path = net.prefix() + "follow.err";
  out_path = "/tmp/" + out_path;
  err_path = "/tmp/" + err_path;
  pid_t follow = client.Spawn({"sh", "-c", "cd /tmp/job && exec clusterctl submit train.yaml --follow --json"}, env,
                              out_path, err_path);
  std::string id;
  REQUIRE(WaitFor([&] {
    std::string out = Slurp(out_path);
    auto at = out.find("\"job_id\"");
    if (at == std::string::npos) return false;
    auto start = out.find('"', out.find(':', at)) + 1;
    id = out.substr(start, out.find('"', start) - start);
    return true;
  }, 60s, 100ms));

  // The epoch-1 checkpoint in the store: rank 0's machine loses power.
  JobInfo job;
  REQUIRE(WaitFor([&] {
    job = ParseJson<JobInfo>(ctl("job " + id + " --json"));
    return job.stored_checkpoints_size() > 0 && job.stored_checkpoints().rbegin()->epoch() >= 1;
  }, 10min, 1s));
  REQUIRE(job.attempts_size() == 1);
  std::string victim = job.attempts(0).ranks(0).node_name();
  for (Machine* w : workers) {
    if (w->name() == victim) w->KillAll();
  }

  int status = 0;
  REQUIRE(WaitFor([&] { return waitpid(follow, &status, WNOHANG) == follow; }, 15min, 1s));
  INFO(Slurp(out_path) << Slurp(err_path));
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);

  job = ParseJson<JobInfo>(ctl("job " + id + " --json"));
  REQUIRE(job.state() == SUCCEEDED);
  REQUIRE(job.attempts_size() == 2);
  for (const auto& rank : job.attempts(1).ranks()) REQUIRE(rank.node_name() != victim);
  MetricsReply metrics = ParseJson<MetricsReply>(ctl("metrics " + id + " --json"));
  std::vector<MetricRecord> second;
  for (const auto& r : metrics.records()) {
    if (r.attempt() == 1) second.push_back(r);
  }
  REQUIRE_FALSE(second.empty());
  REQUIRE(MetricValue(second.front(), "epoch") == 2);  // resumed, not restarted
  double reported = MetricValue(second.back(), "accuracy");

  // On the client: DVCLive files and the model, which scores what the job said.
  REQUIRE(fs::exists(client.HostPath("/tmp/job/dvclive/metrics.json")));
  std::string loss = Slurp(client.HostPath("/tmp/job/dvclive/plots/metrics/loss.tsv"));
  REQUIRE(std::count(loss.begin(), loss.end(), '\n') == 4);  // header + epochs 0, 1, 2
  REQUIRE(fs::exists(client.HostPath("/tmp/job/model.pt")));
  RunResult evaluated = client.Shell("cd /tmp/job && ./fashion_mnist --evaluate model.pt", {}, 5min);
  INFO(evaluated.out << evaluated.err);
  REQUIRE(evaluated.exit_code == 0);
  char expected[64];
  std::snprintf(expected, sizeof expected, "test accuracy: %.4f", reported);
  REQUIRE(evaluated.out.find(expected) != std::string::npos);

  RunResult fetched = ctl("fetch " + id + " --checkpoint --out /tmp/ckpt");
  INFO(fetched.err);
  REQUIRE(fetched.exit_code == 0);
  REQUIRE(fs::exists(client.HostPath("/tmp/ckpt/checkpoint_000002/model.pt")));

  fs::remove(out_path);
  fs::remove(err_path);
}

}  // namespace clusterd::testing
