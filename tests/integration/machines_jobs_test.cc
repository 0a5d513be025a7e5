// Issue "real multiple machines", shown on simulated machines that share
// nothing but the network: workers join as the head's banner says, a job's
// folder that exists only on the client trains across two workers (ctrain's
// Fashion-MNIST MLP, and a PyTorch DDP program with env:// and Gloo), every
// node shows its real address, and a pulled cable is DEAD within node
// timeout plus a heartbeat, the job restarts on the machines that remain and
// the machine comes back ALIVE.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <set>

#include "job_json.h"
#include "machines.h"

using namespace clusterd;
using namespace clusterd::testing;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

constexpr int kHeartbeatMs = 500;     // the defaults: nothing is tuned for the test
constexpr int kNodeTimeoutMs = 2000;

// A head with no agent of its own, workers started exactly as its banner
// says, and a client machine that alone holds the job's folder.
struct MachineCluster {
  SimNetwork net;
  Machine& head = net.AddMachine("head");
  std::vector<Machine*> workers;
  Machine& client;
  std::string join;  // the banner's join command
  std::map<std::string, std::string> client_env;

  explicit MachineCluster(int num_workers) : client(AddWorkersThenClient(num_workers)) {
    RunResult started = head.Run({"clusterd", "start", "--head", "--port", "6379", "--num-cpus", "0", "--num-gpus", "0"});
    INFO(started.out << started.err);
    REQUIRE(started.exit_code == 0);
    std::istringstream banner(started.out);
    for (std::string line; std::getline(banner, line);) {
      if (line.find("clusterd start --address=") != std::string::npos) join = line.substr(line.find_first_not_of(' '));
    }
    // The banner names the head's real address, never loopback, and keeps
    // the token out of clusterd's arguments.
    REQUIRE(join == "CLUSTER_TOKEN=" + Token() + " clusterd start --address=" + head.ip() + ":6379");
    for (Machine* w : workers) {
      RunResult joined = w->Shell(join);
      INFO(w->name() << ": " << joined.out << joined.err);
      REQUIRE(joined.exit_code == 0);
    }
    client_env = {{"CLUSTER_ADDRESS", head.ip() + ":6379"}, {"CLUSTER_TOKEN", Token()}};
    REQUIRE(WaitFor([&] { return Alive() == static_cast<int>(workers.size()); }, 10s, 100ms));
  }

  ~MachineCluster() {
    for (Machine* w : workers) w->Run({"clusterd", "stop", "--force"});
    head.Run({"clusterd", "stop", "--force"});
  }

  Machine& AddWorkersThenClient(int n) {
    for (int i = 1; i <= n; ++i) workers.push_back(&net.AddMachine("w" + std::to_string(i)));
    return net.AddMachine("client");
  }

  std::string Token() const {
    std::ifstream in(head.HostPath("/tmp/clusterd/session_latest/token"));
    std::string token;
    in >> token;
    return token;
  }

  RunResult Ctl(const std::string& args, std::chrono::milliseconds timeout = 30s) {
    return client.Shell("mkdir -p /tmp/job && cd /tmp/job && clusterctl " + args, client_env, timeout);
  }

  ClusterStatus Status() { return ParseJson<ClusterStatus>(Ctl("status --json")); }

  int Alive() {
    RunResult r = Ctl("status --json");
    if (r.exit_code != 0) return -1;
    int alive = 0;
    ClusterStatus status = ParseJson<ClusterStatus>(r);
    for (const auto& node : status.nodes()) alive += node.state() == ALIVE ? 1 : 0;
    return alive;
  }

  NodeState StateOf(const std::string& name) {
    ClusterStatus status = Status();
    for (const auto& node : status.nodes()) {
      if (node.name() == name) return node.state();
    }
    return NODE_STATE_UNSPECIFIED;
  }

  JobInfo Job(const std::string& id) { return ParseJson<JobInfo>(Ctl("job " + id + " --json")); }

  // A file of the job's folder, on the client only.
  void Put(const std::string& name, const std::string& content, fs::perms mode = fs::perms(0644)) {
    fs::path path = client.HostPath("/tmp/job/" + name);
    fs::create_directories(path.parent_path());
    std::ofstream(path) << content;
    fs::permissions(path, mode);
  }
};

std::set<std::string> NodesOf(const AttemptInfo& attempt) {
  std::set<std::string> names;
  for (const auto& rank : attempt.ranks()) names.insert(rank.node_name());
  return names;
}

const char* kDdpProgram = R"(import os
import torch
import torch.distributed as dist

dist.init_process_group("gloo")  # env://: MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(rank)  # different data per rank; DDP keeps the weights equal
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(10, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
for step in range(30):
    x = torch.randn(64, 10)
    loss = ((model(x) - x.sum(1, keepdim=True)) ** 2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
weights = torch.cat([p.detach().flatten() for p in model.parameters()])
everyone = [torch.zeros_like(weights) for _ in range(world)]
dist.all_gather(everyone, weights)
assert all(torch.equal(w, weights) for w in everyone), "replicas diverged"
print(f"rank {rank} of {world} on {os.environ['CLUSTER_NODE_IP']}: loss {loss.item():.4f}, replicas equal")
dist.destroy_process_group()
)";

}  // namespace

TEST_CASE("machines: a folder only the client has trains across two workers joined as the banner says",
          "[machines][train_machines]") {
  REQUIRE_SIM_NETWORK();
  MachineCluster cluster(2);
  Machine& w1 = *cluster.workers[0];
  Machine& w2 = *cluster.workers[1];

  // Every node shows the address the others reach it at.
  ClusterStatus status = cluster.Status();
  REQUIRE(status.nodes_size() == 2);
  for (const auto& node : status.nodes()) {
    Machine& m = node.name() == "w1" ? w1 : w2;
    INFO(node.name());
    REQUIRE((node.name() == "w1" || node.name() == "w2"));
    REQUIRE(node.address() == m.ip());
    REQUIRE(node.observed_address() == m.ip());
  }

  fs::copy_file(FASHION_MNIST_BIN, cluster.client.HostPath("/tmp/job/fashion_mnist"));
  cluster.Put("train.yaml",
              "name: mnist-mlp\n"
              "entrypoint: [./fashion_mnist, --model, mlp, --epochs, '1', --batch-size, '128']\n"
              "working_dir: .\nnum_workers: 2\nplacement: STRICT_SPREAD\n"
              "env: {CTRAIN_NUM_THREADS: '1'}\n");
  cluster.Put("ddp.py", kDdpProgram);
  cluster.Put("ddp.yaml",
              "name: torch-ddp\nentrypoint: [/usr/bin/python3, ddp.py]\nworking_dir: .\nexcludes: [fashion_mnist]\n"
              "num_workers: 2\nplacement: STRICT_SPREAD\nenv: {OMP_NUM_THREADS: '1'}\n");
  for (Machine* m : {&cluster.head, &w1, &w2}) REQUIRE_FALSE(fs::exists(m->HostPath("/tmp/job")));

  RunResult trained = cluster.Ctl("submit train.yaml --follow --json", 15min);
  INFO(trained.out << trained.err);
  REQUIRE(trained.exit_code == 0);
  REQUIRE(trained.out.find("accuracy") != std::string::npos);
  JobInfo mlp = cluster.Job(SubmittedJobId(trained));
  REQUIRE(mlp.state() == SUCCEEDED);
  REQUIRE(NodesOf(mlp.attempts(0)) == std::set<std::string>{"w1", "w2"});
  REQUIRE(mlp.attempts(0).master_addr() != "127.0.0.1");

  RunResult ddp = cluster.Ctl("submit ddp.yaml --follow --json", 5min);
  INFO(ddp.out << ddp.err);
  REQUIRE(ddp.exit_code == 0);
  REQUIRE(ddp.out.find("rank 0 of 2 on " + w1.ip()) != std::string::npos);
  REQUIRE(ddp.out.find("rank 1 of 2 on " + w2.ip()) != std::string::npos);
  REQUIRE(ddp.out.find("replicas equal") != std::string::npos);
  // Rank 1 printed on w2 into its agent's pipe; the head's copy (a pack
  // record there) reaches the client afterwards too.
  RunResult rank1 = cluster.Ctl("logs " + SubmittedJobId(ddp) + " --rank 1", 30s);
  INFO(rank1.out << rank1.err);
  REQUIRE(rank1.exit_code == 0);
  REQUIRE(rank1.out.find("rank 1 of 2 on " + w2.ip()) != std::string::npos);
  REQUIRE(rank1.out.find("rank 0 of 2") == std::string::npos);

  // The code came from the client: the workers never had /tmp/job.
  for (Machine* m : {&cluster.head, &w1, &w2}) REQUIRE_FALSE(fs::exists(m->HostPath("/tmp/job")));
}

TEST_CASE("machines: a pulled cable is DEAD within node timeout plus a heartbeat, the job restarts on the machines "
          "that remain, and the machine comes back",
          "[machines][train_machines]") {
  REQUIRE_SIM_NETWORK();
  MachineCluster cluster(3);
  // Attempt 0 waits to be cut off; the retry finishes.
  cluster.Put("run.sh",
              "#!/bin/sh\necho \"attempt $CLUSTER_ATTEMPT rank $RANK on $CLUSTER_NODE_IP\"\n"
              "if [ \"$CLUSTER_ATTEMPT\" = 0 ]; then exec sleep 300; fi\nsleep 1\n",
              fs::perms(0755));
  cluster.Put("job.yaml",
              "name: cut\nentrypoint: ./run.sh\nworking_dir: .\nnum_workers: 2\nplacement: STRICT_SPREAD\nmax_failures: 1\n");
  RunResult submitted = cluster.Ctl("submit job.yaml --json");
  REQUIRE(submitted.exit_code == 0);
  std::string id = SubmittedJobId(submitted);
  JobInfo job;
  REQUIRE(WaitFor([&] {
    job = cluster.Job(id);
    return job.attempts_size() == 1 && job.attempts(0).ranks(0).pid() > 0 && job.attempts(0).ranks(1).pid() > 0;
  }, 60s, 100ms));
  std::string victim = job.attempts(0).ranks(0).node_name();
  Machine& cut = *cluster.workers[victim == "w1" ? 0 : victim == "w2" ? 1 : 2];

  auto pulled = std::chrono::steady_clock::now();
  cut.CutLink();
  REQUIRE(WaitFor([&] { return cluster.StateOf(victim) == DEAD; }, 10s, 50ms));
  int64_t dead_after = MillisSince(pulled);
  WARN(victim << " DEAD " << dead_after << " ms after its cable was pulled");
  // The bound is the head's (node timeout + one heartbeat); the slack is for
  // the polling clusterctl itself on a loaded 2-core machine.
  REQUIRE(dead_after <= kNodeTimeoutMs + kHeartbeatMs + 500);

  job = [&] {
    JobInfo ended;
    REQUIRE(WaitFor([&] { return IsFinal((ended = cluster.Job(id)).state()); }, 60s, 200ms));
    return ended;
  }();
  INFO(job.reason());
  REQUIRE(job.state() == SUCCEEDED);
  REQUIRE(job.attempts_size() == 2);
  REQUIRE(job.attempts(0).failure_reason().find("node " + victim + " died") != std::string::npos);
  std::set<std::string> second = NodesOf(job.attempts(1));
  REQUIRE(second.size() == 2);
  REQUIRE_FALSE(second.count(victim));

  cut.RestoreLink();
  REQUIRE(WaitFor([&] { return cluster.StateOf(victim) == ALIVE; }, 20s, 200ms));
  // Its old rank ran on, cut off; once back, the head has it stopped.
  REQUIRE(WaitFor([&] {
    for (pid_t pid : cut.Pids()) {
      std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline");
      std::string cmdline((std::istreambuf_iterator<char>(in)), {});
      if (cmdline.find("sleep") != std::string::npos) return false;
    }
    return true;
  }, 30s, 200ms));
}

// A sweep as a DVC stage runs it, from a client that alone holds the code:
// the trials train on the workers, and best_params.yaml and trials.csv land
// in the client's folder, nowhere else.
TEST_CASE("machines: a sweep submitted from the client writes best_params.yaml and trials.csv there",
          "[machines][train_machines]") {
  REQUIRE_SIM_NETWORK();
  MachineCluster cluster(2);
  fs::copy_file(FASHION_MNIST_BIN, cluster.client.HostPath("/tmp/job/fashion_mnist"));
  cluster.Put("sweep.yaml",
              "name: small-sweep\n"
              "entrypoint: [./fashion_mnist, --model, mlp, --epochs, '2', --lr, '{lr}', --hidden, '{hidden}',"
              " --save-model, model.pt]\n"
              "working_dir: .\nnum_workers: 1\nenv: {CTRAIN_NUM_THREADS: '1'}\n"
              "outputs: [model.pt]\ndvclive: dvclive\n"
              "tune:\n  metric: accuracy\n  mode: max\n  num_samples: 2\n  seed: 3\n"
              "  search_space:\n    lr: {loguniform: [1.0e-3, 1.0e-2]}\n    hidden: {grid: [16, 32]}\n"
              "  scheduler:\n    asha: {max_t: 2, grace_period: 1, reduction_factor: 2}\n"
              "  best_params: results/best_params.yaml\n");
  RunResult swept = cluster.Ctl("submit sweep.yaml --follow", 10min);
  INFO(swept.out << swept.err);
  REQUIRE(swept.exit_code == 0);
  const std::string prefix = "Submitted sweep ";
  REQUIRE(swept.out.rfind(prefix, 0) == 0);
  const std::string id = swept.out.substr(prefix.size(), swept.out.find(' ', prefix.size()) - prefix.size());
  SweepInfo sweep = ParseJson<SweepInfo>(cluster.Ctl("sweep " + id + " --json"));
  REQUIRE(sweep.state() == SWEEP_SUCCEEDED);
  REQUIRE(sweep.trials_size() == 4);
  std::set<std::string> nodes;
  for (const auto& trial : sweep.trials()) {
    JobInfo job = cluster.Job(trial.job_id());
    nodes.insert(job.attempts(0).ranks(0).node_name());
  }
  REQUIRE(nodes == std::set<std::string>{"w1", "w2"});
  const TrialInfo& best = sweep.trials(sweep.best_trial());
  REQUIRE(Slurp(cluster.client.HostPath("/tmp/job/results/best_params.yaml")) ==
          "lr: " + best.params().at("lr") + "\nhidden: " + best.params().at("hidden") + "\n");
  const std::string csv = Slurp(cluster.client.HostPath("/tmp/job/results/trials.csv"));
  REQUIRE(std::count(csv.begin(), csv.end(), '\n') == 5);
  // max_t is the last epoch: the best trial wrote its model and exited by
  // itself, and its model and DVCLive files reached the client.
  CHECK(cluster.Job(best.job_id()).state() == SUCCEEDED);
  CHECK(fs::file_size(cluster.client.HostPath("/tmp/job/model.pt")) > 0);
  CHECK(fs::exists(cluster.client.HostPath("/tmp/job/dvclive/metrics.json")));
  for (Machine* m : {&cluster.head, cluster.workers[0], cluster.workers[1]}) {
    REQUIRE_FALSE(fs::exists(m->HostPath("/tmp/job")));
  }
}
