// The results scenario of machines_results_test.cc with the cluster's store
// in S3 (`--store s3://`): Ceph's radosgw runs on a machine of its own, and
// every other machine reads and writes it with its own credentials. A
// 2-rank MLP on three workers loses rank 0's whole machine after its
// epoch-1 checkpoint; the next attempt resumes at epoch 2 from the
// checkpoint in S3; the client gets model.pt and the DVCLive files, and
// `fetch --checkpoint` the last checkpoint, from S3; the head's disk holds
// only metadata, by its size.
#include <signal.h>
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "ceph_fixture.h"
#include "job_json.h"
#include "machines.h"

using namespace clusterd;
using namespace clusterd::testing;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

double Value(const MetricRecord& record, const std::string& name) {
  auto it = record.values().find(name);
  REQUIRE(it != record.values().end());
  return it->second;
}

}  // namespace

TEST_CASE("machines: with --store s3:// and radosgw on its own machine, rank 0's machine dies after a checkpoint, "
          "the job resumes from S3 and its results reach the client",
          "[machines][results_machines][ceph][s3]") {
  REQUIRE_SIM_NETWORK();
  SimNetwork net;
  Machine& storage = net.AddMachine("s3");
  Machine& head = net.AddMachine("head");
  std::vector<Machine*> workers = {&net.AddMachine("w1"), &net.AddMachine("w2"), &net.AddMachine("w3")};
  Machine& client = net.AddMachine("client");
  CephPlace place;
  place.wrap = {"/usr/bin/nsenter", "-t", std::to_string(storage.holder()), "-m", "-n", "-u", "--"};
  place.gateway_host = storage.ip();
  place.parent_dir = "/var/tmp";  // the machine's /tmp is its own
  std::string ceph_why_not;
  auto ceph = CephFixture::Start(&ceph_why_not, place);
  if (!ceph) {
    SkipTest("no Ceph radosgw here: " + ceph_why_not);
    return;
  }
  REQUIRE(ceph->CreateBucket("cluster"));
  // Each machine's own credentials (here the same key), none on a command line.
  std::map<std::string, std::string> aws = {{"AWS_ACCESS_KEY_ID", ceph->access_key()},
                                            {"AWS_SECRET_ACCESS_KEY", ceph->secret_key()},
                                            {"AWS_ENDPOINT_URL", ceph->endpoint()}};
  RunResult started = head.Run({"clusterd", "start", "--head", "--port", "6379", "--num-cpus", "0", "--num-gpus", "0",
                                "--state-dir", "/tmp/state", "--store", "s3://cluster/run"}, aws);
  INFO(started.out << started.err);
  REQUIRE(started.exit_code == 0);
  std::string token;
  std::ifstream(head.HostPath("/tmp/clusterd/session_latest/token")) >> token;
  std::map<std::string, std::string> env = aws;
  env.insert({{"CLUSTER_ADDRESS", head.ip() + ":6379"}, {"CLUSTER_TOKEN", token}});
  for (Machine* w : workers) REQUIRE(w->Run({"clusterd", "start", "--address", head.ip() + ":6379", "--num-cpus", "1"}, env).exit_code == 0);
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
  REQUIRE(Value(second.front(), "epoch") == 2);  // resumed, not restarted
  double reported = Value(second.back(), "accuracy");

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

  // The head's disk: journal, logs and token, no blob (a model alone is far larger).
  CHECK_FALSE(fs::exists(head.HostPath("/tmp/state/store")));
  int64_t head_bytes = 0;
  for (const auto& e : fs::recursive_directory_iterator(head.HostPath("/tmp/state"))) {
    if (e.is_regular_file()) head_bytes += static_cast<int64_t>(e.file_size());
  }
  INFO("head state bytes: " << head_bytes);
  CHECK(head_bytes < static_cast<int64_t>(fs::file_size(client.HostPath("/tmp/ckpt/checkpoint_000002/model.pt"))));

  for (Machine* m : {&head, workers[0], workers[1], workers[2]}) m->Run({"clusterd", "stop", "--force"});
  fs::remove(out_path);
  fs::remove(err_path);
}
