// The head's queue limits and its summed-up demands on a real head:
// clusterctl submit past max_submitted_jobs_per_user is refused with the
// limit, the count and the key; a head restarted on a journal of 360,000
// waiting jobs starts (it stopped itself: its own agent did not register
// while the loop tried each job again) and `clusterctl status` stays a few
// lines.
#include <catch2/catch.hpp>

#include <fstream>
#include <string>

#include "big_journal.h"
#include "harness.h"

using namespace clusterd;
using namespace clusterd::testing;

namespace {

// An array of `count` jobs that ask for a GPU: no node here has one.
std::string GpuArrayFile(const Cluster& cluster, int count) {
  const std::string path = cluster.temp_dir() + "/gpus.yaml";
  std::ofstream(path) << "name: gpus\nworking_dir: " << cluster.temp_dir() << "\nworking_dir_mode: shared\n"
                      << "entrypoint: ['/bin/true']\nresources_per_worker: {GPU: 1}\narray: {count: " << count
                      << "}\n";
  return path;
}

}  // namespace

TEST_CASE("clusterctl submit past max_submitted_jobs_per_user is refused whole, with the limit, the count and the key",
          "[limits]") {
  Cluster cluster;
  REQUIRE(cluster.StartHead({"--node-ip-address", "127.0.0.1", "--num-cpus", "1", "--max-submitted-jobs-per-user", "4"})
              .exit_code == 0);
  const std::string file = GpuArrayFile(cluster, 3);
  REQUIRE(cluster.Ctl({"submit", file}).exit_code == 0);
  RunResult refused = cluster.Ctl({"submit", file});
  INFO(refused.err);
  CHECK(refused.exit_code != 0);
  CHECK(refused.err.find("refused: user admin has 3 jobs not yet finished, and 3 jobs more would "
                         "pass the limit of 4 per user (config max_submitted_jobs_per_user); nothing was submitted. "
                         "Wait for jobs to finish, or stop some (clusterctl stop)") != std::string::npos);
  // Nothing of the refused array was made; what waits is one line.
  RunResult status = cluster.Ctl({"status"});
  INFO(status.out);
  REQUIRE(status.exit_code == 0);
  CHECK(status.out.find("\nDemands:\n 3 jobs of 1 x {1 GPU}: INFEASIBLE: cannot fit even on an idle cluster: needs "
                        "1 x {1 GPU} (PACK); 1 schedulable node holds 0 such workers; e.g. on head: GPU: 1 > 0 "
                        "(first: job-0001") != std::string::npos);
}

TEST_CASE("a head restarted on a journal of 360,000 waiting jobs starts, and clusterctl status stays a few lines",
          "[limits][restart]") {
  Cluster cluster;
  REQUIRE(WriteBigJournal(cluster.temp_dir() + "/state", 1000, 360000).ok());
  RunResult started = cluster.StartHead({"--node-ip-address", "127.0.0.1", "--num-cpus", "1"});
  INFO(started.err);
  REQUIRE(started.exit_code == 0);
  CHECK(cluster.StateOf("head") == ALIVE);
  // Reasons count the nodes as of the Tick after the head's node joined
  // (within a heartbeat period).
  RunResult status;
  const std::string demands =
      "\nDemands:\n 360,000 jobs of 1 x {1 GPU}: INFEASIBLE: cannot fit even on an idle cluster: needs 1 x {1 GPU} "
      "(PACK); 1 schedulable node holds 0 such workers; e.g. on head: GPU: 1 > 0 (first: job-1001, waiting)\n";
  WaitFor([&] {
    status = cluster.Ctl({"status"});
    return status.out.find(demands) != std::string::npos;
  }, std::chrono::seconds(10), std::chrono::milliseconds(200));
  INFO(status.out);
  REQUIRE(status.exit_code == 0);
  CHECK(status.out.find("\nDemands:\n 360,000 jobs of 1 x {1 GPU}: INFEASIBLE: cannot fit even on an idle cluster: "
                        "needs 1 x {1 GPU} (PACK); 1 schedulable node holds 0 such workers; e.g. on head: GPU: 1 > 0 "
                        "(first: job-1001, waiting)\n") != std::string::npos);
  CHECK(status.out.size() < 4096);
  // Past the limits, a submit is refused; the head goes on.
  RunResult refused = cluster.Ctl({"submit", GpuArrayFile(cluster, 1)});
  CHECK(refused.exit_code != 0);
  CHECK(refused.err.find("(config max_submitted_jobs_per_user)") != std::string::npos);
  CHECK(cluster.StateOf("head") == ALIVE);
}
