// Issue "results that survive machines", on simulated machines that share
// nothing but the network, with the head's own store: rank 0's machine dies
// (rank_zero_loss.h tells the scenario), and a job ends while the head's
// machine is down.
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <thread>

#include "job_json.h"
#include "machines.h"
#include "machines_cluster.h"
#include "rank_zero_loss.h"

namespace fs = std::filesystem;

using namespace clusterd;
using namespace clusterd::testing;

TEST_CASE("machines: rank 0's machine dies after a checkpoint, the job resumes elsewhere from the store and its "
          "results reach the client",
          "[machines][results_machines]") {
  REQUIRE_SIM_NETWORK();
  HeadWorkersClient cluster(/*worker_count=*/3, /*cpus=*/1);
  RunRankZeroLoss({&cluster.net, cluster.workers, &cluster.client, cluster.env});

  cluster.StopDaemons();
}

// The whole job runs and ends while the head's machine is down: its agents
// keep rank 0's reports and its exit, upload its last checkpoint and its
// outputs once the head is back, and the client, which alone holds the
// job's folder, gets every epoch's DVCLive row and the model.
TEST_CASE("machines: a job that ends while the head's machine is down brings its reports and its last checkpoint and "
          "outputs to the client",
          "[machines][results_machines]") {
  REQUIRE_SIM_NETWORK();
  SimCluster c(/*head_cpus=*/0);
  c.WhenReadyWriteJob("name: ends-unseen\nentrypoint: ./run.sh\nworking_dir: .\nnum_workers: 2\n"
                      "placement: STRICT_SPREAD\ndvclive: dvclive\noutputs: [model.pt]\n");
  fs::copy_file(LINEAR_BIN, c.client.HostPath("/tmp/job/linear"));
  const std::string run = c.client.HostPath("/tmp/job/run.sh");
  std::ofstream(run) << "#!/bin/sh\nset -e\nwhile [ ! -e /tmp/go ]; do sleep 0.05; done\n./linear --epochs 3\n"
                     << "if [ \"$RANK\" = 0 ]; then echo \"weights of $CLUSTER_JOB_ID\" > model.pt; fi\n"
                     << "touch /tmp/ended\n";
  fs::permissions(run, fs::perms(0755));
  RunResult submitted = c.Ctl("submit job.yaml --json");
  INFO(submitted.out << submitted.err);
  REQUIRE(submitted.exit_code == 0);
  const std::string id = SubmittedJobId(submitted);
  c.WaitTwoRanksRunning(id);

  c.head.KillAll();
  REQUIRE(c.head.Pids().empty());
  for (Machine* w : {&c.w1, &c.w2}) std::ofstream(w->HostPath("/tmp/go")) << "go";
  REQUIRE(WaitFor([&] { return Exists(c.w1.HostPath("/tmp/ended")) && Exists(c.w2.HostPath("/tmp/ended")); }, 120s,
                  100ms));
  std::this_thread::sleep_for(1500ms);  // reaped, and the uploads tried against no head
  c.StartHead();

  JobInfo job = c.WaitUntilFinal(id, 90s);
  INFO(job.reason());
  REQUIRE(job.state() == SUCCEEDED);
  REQUIRE(job.attempts_size() == 1);  // adopted, not run again
  REQUIRE(job.stored_checkpoints_size() >= 1);
  REQUIRE(job.stored_checkpoints().rbegin()->name() == "checkpoint_000002");
  RunResult fetched = c.Ctl("fetch " + id, 60s);
  INFO(fetched.out << fetched.err);
  REQUIRE(fetched.exit_code == 0);
  REQUIRE(Slurp(c.client.HostPath("/tmp/job/model.pt")) == "weights of " + id + "\n");
  const std::string loss = Slurp(c.client.HostPath("/tmp/job/dvclive/plots/metrics/loss.tsv"));
  INFO(loss);
  REQUIRE(std::count(loss.begin(), loss.end(), '\n') == 4);  // the header and epochs 0, 1, 2, once each
  for (const char* step : {"\t0\t", "\t1\t", "\t2\t"}) REQUIRE(loss.find(step) != std::string::npos);
}

// Issue "a job that SUCCEEDED has its last checkpoint stored": a job's last
// checkpoint takes seconds to reach the store (its node's link is slow),
// and the moment `submit --follow` exits 0, `fetch --checkpoint` gives that
// checkpoint, whole by its checksum; also when the head's machine restarts
// while the job waits for it.
TEST_CASE("machines: the moment --follow says SUCCEEDED, fetch --checkpoint gives the last checkpoint, also across a "
          "head restart during the wait",
          "[machines][results_machines]") {
  REQUIRE_SIM_NETWORK();
  for (const bool restart_head : {false, true}) {
    INFO((restart_head ? "the head restarts during the wait" : "no restart"));
    SimCluster c(/*head_cpus=*/0);
    // 40 Mbit/s out of each worker: a 24 MiB checkpoint takes about 5 s.
    for (Machine* w : {&c.w1, &c.w2}) {
      RunResult shaped = w->Run({"tc", "qdisc", "add", "dev", "eth0", "root", "tbf", "rate", "40mbit", "burst", "64kb",
                                 "latency", "2s"});
      INFO(shaped.err);
      REQUIRE(shaped.exit_code == 0);
    }
    c.WhenReadyWriteJob("name: last-checkpoint\nentrypoint: [/usr/bin/python3, job.py]\nworking_dir: .\n"
                        "num_workers: 1\n");
    // Two checkpoints reported back to back from temporary folders, then
    // the rank exits: the last one is still on its way to the store.
    std::ofstream(c.client.HostPath("/tmp/job/job.py"))
        << "import hashlib, os, tempfile\n"
        << "from clusterd import train\n"
        << "for epoch in range(2):\n"
        << "    with tempfile.TemporaryDirectory() as tmp:\n"
        << "        data = os.urandom(24 << 20)\n"
        << "        with open(os.path.join(tmp, 'w.bin'), 'wb') as f:\n"
        << "            f.write(data)\n"
        << "        train.report({'epoch': epoch}, checkpoint=train.Checkpoint.from_directory(tmp))\n"
        << "        print(f'checkpoint {epoch} sha256 {hashlib.sha256(data).hexdigest()}', flush=True)\n";
    const std::string out_path = "/tmp/" + c.net.prefix() + "follow.out";
    const std::string err_path = "/tmp/" + c.net.prefix() + "follow.err";
    pid_t follow = c.client.Spawn({"sh", "-c", "cd /tmp/job && exec clusterctl submit job.yaml --follow"},
                                  {{"CLUSTER_ADDRESS", c.address()}, {"CLUSTER_TOKEN", c.token}}, out_path, err_path);
    std::string sha;
    REQUIRE(WaitFor([&] {
      const std::string out = Slurp(out_path);
      const auto at = out.find("checkpoint 1 sha256 ");
      if (at == std::string::npos) return false;
      sha = out.substr(at + 20, 64);
      return sha.size() == 64;
    }, 120s, 50ms));
    if (restart_head) {
      c.head.KillAll();
      std::this_thread::sleep_for(1s);
      c.StartHead();
    }
    // Meanwhile the job says what it waits for.
    bool said_finishing = false;
    int status = 0;
    REQUIRE(WaitFor([&] {
      if (waitpid(follow, &status, WNOHANG) == follow) return true;
      if (!restart_head && !said_finishing) {
        const std::string out = Slurp(out_path);
        const auto at = out.find("Submitted job ");
        if (at != std::string::npos) {
          RunResult shown = c.Ctl("job " + out.substr(at + 14, out.find('\n', at) - at - 14) + " --json", 10s);
          said_finishing = shown.out.find("finishing: rank 0 exited 0; storing checkpoint_00000") != std::string::npos;
        }
      }
      return false;
    }, 5min, 20ms));
    if (!restart_head) CHECK(said_finishing);
    const std::string out = Slurp(out_path);
    INFO(out << Slurp(err_path));
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 0);
    const auto at = out.find("Submitted job ");
    REQUIRE(at != std::string::npos);
    const std::string id = out.substr(at + 14, out.find('\n', at) - at - 14);

    // At once: the last checkpoint, whole.
    RunResult fetched = c.Ctl("fetch " + id + " --checkpoint --out /tmp/ck");
    INFO(fetched.out << fetched.err);
    REQUIRE(fetched.exit_code == 0);
    RunResult summed = c.client.Run({"sha256sum", "/tmp/ck/checkpoint_000001/w.bin"});
    REQUIRE(summed.out.substr(0, 64) == sha);
    JobInfo job = ParseJson<JobInfo>(c.Ctl("job " + id + " --json"));
    REQUIRE(job.state() == SUCCEEDED);
    REQUIRE(job.attempts_size() == 1);
    REQUIRE(job.stored_checkpoints().rbegin()->name() == "checkpoint_000001");
    fs::remove(out_path);
    fs::remove(err_path);
  }
}
