// Issue "Python", on simulated machines that share nothing but the network:
// a client machine alone holds the ported Ray Train checkpoint tutorial
// (examples/python/ray_train_checkpoints.py) and runs it with Debian's
// python3; rank 0's machine dies after a stored checkpoint; the gang
// resumes from it on the other machines, and fit() returns the final
// checkpoint, which the client loads.
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "job_json.h"
#include "machines.h"
#include "machines_cluster.h"

namespace fs = std::filesystem;

using namespace clusterd;
using namespace clusterd::testing;
using namespace std::chrono_literals;

namespace {

// `env` with the repository's Python package on the path, writing no bytecode into it.
std::map<std::string, std::string> PythonEnv(std::map<std::string, std::string> env) {
  env["PYTHONPATH"] = std::string(CLUSTERD_SOURCE_DIR) + "/python";
  env["PYTHONDONTWRITEBYTECODE"] = "1";
  return env;
}

}  // namespace

TEST_CASE("machines: a Python TorchTrainer whose rank 0's machine dies resumes elsewhere and fit() returns the final "
          "checkpoint to the client",
          "[machines][python_machines]") {
  REQUIRE_SIM_NETWORK();
  HeadWorkersClient cluster(/*worker_count=*/3, /*cpus=*/1);
  Machine& client = cluster.client;
  const std::map<std::string, std::string>& env = cluster.env;

  // Only the client has the script: its folder is shipped as the job's working_dir.
  fs::create_directories(client.HostPath("/tmp/project"));
  fs::copy_file(std::string(CLUSTERD_SOURCE_DIR) + "/examples/python/ray_train_checkpoints.py",
                client.HostPath("/tmp/project/ray_train_checkpoints.py"));
  const std::string out_path = "/tmp/" + cluster.net.prefix() + "python-fit.out";
  const std::string err_path = "/tmp/" + cluster.net.prefix() + "python-fit.err";
  pid_t fit = client.Spawn({"/usr/bin/python3", "/tmp/project/ray_train_checkpoints.py", "--num-epochs", "8",
                            "--epoch-seconds", "1", "--max-failures", "1", "--storage-path", "/tmp/results"},
                           PythonEnv(env), out_path, err_path);

  auto ctl = [&](const std::string& args) { return client.Shell("clusterctl " + args, env, 30s); };
  std::string id;
  JobInfo job;
  REQUIRE(WaitFor([&] {
    const std::string out = Slurp(out_path);
    const auto at = out.find("Submitted job ");
    if (at == std::string::npos) return false;
    id = out.substr(at + 14, out.find('\n', at) - at - 14);
    return true;
  }, 120s, 100ms));
  // Epoch 1's checkpoint is in the store: rank 0's machine loses power.
  REQUIRE(WaitFor([&] {
    job = ParseJson<JobInfo>(ctl("job " + id + " --json"));
    return job.stored_checkpoints_size() > 0 && job.stored_checkpoints().rbegin()->epoch() >= 1;
  }, 5min, 500ms));
  REQUIRE(job.attempts_size() == 1);
  const std::string victim = job.attempts(0).ranks(0).node_name();
  for (Machine* w : cluster.workers) {
    if (w->name() == victim) w->KillAll();
  }

  int status = 0;
  REQUIRE(WaitFor([&] { return waitpid(fit, &status, WNOHANG) == fit; }, 10min, 500ms));
  const std::string out = Slurp(out_path);
  INFO(out << Slurp(err_path));
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  REQUIRE(out.find("resumed from checkpoint_0000") != std::string::npos);
  // fit() returned the last epoch's checkpoint, fetched to the client and loaded there.
  REQUIRE(out.find("Result checkpoint: /tmp/results/dl_trainer_restore/" + id + "/checkpoint_000007") !=
          std::string::npos);
  REQUIRE(out.find("Loaded the model of epoch 7") != std::string::npos);
  REQUIRE(out.find("'training_iteration': 8") != std::string::npos);

  job = ParseJson<JobInfo>(ctl("job " + id + " --json"));
  REQUIRE(job.state() == SUCCEEDED);
  REQUIRE(job.attempts_size() == 2);
  REQUIRE_FALSE(job.attempts(1).restored_checkpoint().empty());
  for (const auto& rank : job.attempts(1).ranks()) REQUIRE(rank.node_name() != victim);

  fs::remove(out_path);
  fs::remove(err_path);
  cluster.StopDaemons();
}

// The ported Ray Tune tutorial (examples/python/tune_asha_fashion_mnist.py)
// from a client that alone holds it: the head's sweep runs its trials on
// the workers, ASHA stops the weak ones, and the best result the script
// prints is a trial with the best last accuracy, as Ray's
// get_best_result() picks it: among every trial that did not fail, those
// ASHA stopped too (one stopped at epoch 1 may beat every trial that
// ran on and got worse), as the head's best_params.yaml and trials.csv say.
TEST_CASE("machines: a Python Tuner with ASHA runs its trials on the workers and finds its best trial",
          "[machines][python_machines]") {
  REQUIRE_SIM_NETWORK();
  HeadWorkersClient cluster(/*worker_count=*/2, /*cpus=*/2);
  Machine& client = cluster.client;
  const std::map<std::string, std::string>& env = cluster.env;
  fs::create_directories(client.HostPath("/tmp/project"));
  for (const char* file : {"tune_asha_fashion_mnist.py", "fashion_mnist_data.py"}) {
    fs::copy_file(std::string(CLUSTERD_SOURCE_DIR) + "/examples/python/" + file, client.HostPath("/tmp/project/") + file);
  }
  RunResult tuned = client.Run({"/usr/bin/python3", "/tmp/project/tune_asha_fashion_mnist.py", "--num-samples", "8",
                                "--epochs", "4", "--storage-path", "/tmp/results"},
                               PythonEnv(env), 10min);
  INFO(tuned.out << tuned.err);
  REQUIRE(tuned.exit_code == 0);

  // trials.csv: trial,job_id,state,lr,momentum,iterations,mean_accuracy,reason
  std::ifstream csv(client.HostPath("/tmp/results/tune_asha_fashion_mnist/trials.csv"));
  std::string line;
  std::getline(csv, line);
  REQUIRE(line == "trial,job_id,state,lr,momentum,iterations,mean_accuracy,reason");
  int early_stopped = 0, trials = 0;
  double best_accuracy = -1;
  std::set<std::string> best_lrs;  // every trial with the best accuracy: ties are the head's to break
  std::set<std::string> nodes;
  while (std::getline(csv, line)) {
    std::vector<std::string> cells;
    std::stringstream row(line);
    for (std::string cell; std::getline(row, cell, ',') && cells.size() < 7;) cells.push_back(cell);
    REQUIRE(cells.size() == 7);
    ++trials;
    if (cells[2] == "EARLY_STOPPED") ++early_stopped;
    if ((cells[2] == "DONE" || cells[2] == "EARLY_STOPPED") && !cells[6].empty()) {
      const double accuracy = std::stod(cells[6]);
      if (accuracy > best_accuracy) best_lrs.clear();
      if (accuracy >= best_accuracy) {
        best_accuracy = accuracy;
        best_lrs.insert(cells[3]);
      }
    }
    JobInfo job = ParseJson<JobInfo>(client.Run({"clusterctl", "job", cells[1], "--json"}, env));
    nodes.insert(job.attempts(0).ranks(0).node_name());
  }
  REQUIRE(trials == 8);
  REQUIRE(early_stopped >= 1);
  REQUIRE(nodes == std::set<std::string>{"w1", "w2"});
  // The best the script printed is a known best, and best_params.yaml names the same one.
  REQUIRE_FALSE(best_lrs.empty());
  const std::string best_params = Slurp(client.HostPath("/tmp/results/tune_asha_fashion_mnist/best_params.yaml"));
  INFO("best params: " << best_params);
  int named = 0;
  for (const std::string& lr : best_lrs) {
    // Whole values: one lr may begin another's digits.
    if (tuned.out.find("Best config: {'lr': " + lr + ",") == std::string::npos) continue;
    ++named;
    CHECK(best_params.find("lr: " + lr + "\n") != std::string::npos);
  }
  REQUIRE(named == 1);

  cluster.StopDaemons();
}

// Ray's JobSubmissionClient from a client machine that alone holds the
// job's folder, against the head's dashboard port: the folder is shipped
// over HTTP, the job runs on a worker, and its status and logs come back.
TEST_CASE("machines: a Python JobSubmissionClient submits a folder only the client has and reads its status and logs",
          "[machines][python_machines]") {
  REQUIRE_SIM_NETWORK();
  SimNetwork net;
  Machine& head = net.AddMachine("head");
  Machine& worker = net.AddMachine("w1");
  Machine& client = net.AddMachine("client");
  const std::map<std::string, std::string> env =
      StartHeadAndWorkers(head, {&worker}, 1, {"--dashboard-host", head.ip()});
  fs::create_directories(client.HostPath("/tmp/project"));
  std::ofstream(client.HostPath("/tmp/project/hello.py"))
      << "import os, socket\nprint('hello from', socket.gethostname(), open('data.txt').read().strip(), "
         "os.environ['GREETING'], flush=True)\n";
  std::ofstream(client.HostPath("/tmp/project/data.txt")) << "shipped-from-the-client\n";
  std::ofstream(client.HostPath("/tmp/project/submit.py"))
      << "import sys\n"
      << "from clusterd.job_submission import JobSubmissionClient, JobStatus\n"
      << "client = JobSubmissionClient('http://" << head.ip() << ":8265')\n"
      << "job = client.submit_job(entrypoint='/usr/bin/python3 hello.py',\n"
      << "                        runtime_env={'working_dir': '/tmp/project', 'env_vars': {'GREETING': 'hi'}},\n"
      << "                        submission_id='from-the-client')\n"
      << "status = client.wait_until_status(job, {JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.STOPPED}, "
         "timeout_seconds=120)\n"
      << "print('submission', job, 'status', status.value)\n"
      << "print(client.get_job_logs(job))\n"
      << "sys.exit(0 if status == JobStatus.SUCCEEDED else 1)\n";
  std::map<std::string, std::string> client_env = {{"CLUSTER_TOKEN", env.at("CLUSTER_TOKEN")},
                                                   {"PYTHONPATH", std::string(CLUSTERD_SOURCE_DIR) + "/python"},
                                                   {"PYTHONDONTWRITEBYTECODE", "1"}};
  RunResult submitted = client.Run({"/usr/bin/python3", "/tmp/project/submit.py"}, client_env, 3min);
  INFO(submitted.out << submitted.err);
  REQUIRE(submitted.exit_code == 0);
  REQUIRE(submitted.out.find("submission from-the-client status SUCCEEDED") != std::string::npos);
  REQUIRE(submitted.out.find("hello from w1 shipped-from-the-client hi") != std::string::npos);

  // A wrong token is refused by name, and nothing is submitted.
  client_env["CLUSTER_TOKEN"] = std::string(32, '0');
  RunResult refused = client.Run({"/usr/bin/python3", "/tmp/project/submit.py"}, client_env, 60s);
  INFO(refused.out << refused.err);
  REQUIRE(refused.exit_code != 0);
  REQUIRE(refused.err.find("wrong cluster token") != std::string::npos);

  for (Machine* m : {&head, &worker}) m->Run({"clusterd", "stop", "--force"});
}
