// What a job asks for holds on a real node (daemon/agent/cgroup_limits.h):
// a rank that allocates past resources_per_worker's memory is killed by
// the kernel and the job's record says "out of memory (limit ...)"; a fork
// bomb stops at the node's attempt_pids_max, and the node's
// clusterd.limits label says which limits hold. Each case is skipped,
// saying why, only where this machine offers no such cgroup controller.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "harness.h"
#include "job_json.h"

using namespace clusterd;
using namespace clusterd::testing;
using namespace std::chrono_literals;

namespace {

// The node's clusterd.limits label, from `clusterctl status --json`.
std::string LimitsOf(Cluster& cluster) {
  ClusterStatus status = cluster.Status();
  REQUIRE(status.nodes_size() >= 1);
  auto it = status.nodes(0).labels().find("clusterd.limits");
  REQUIRE(it != status.nodes(0).labels().end());
  return it->second;
}

std::string Submit(Cluster& cluster, const std::string& name, const std::string& body) {
  const std::string job_file = cluster.temp_dir() + "/" + name + ".yaml";
  std::ofstream(job_file) << "name: " << name << "\n" << body;
  return SubmittedJobId(cluster.Ctl({"submit", job_file, "--json"}));
}

}  // namespace

TEST_CASE("a rank that allocates past its memory is killed by the kernel and its job says out of memory and the limit",
          "[limits]") {
  Cluster cluster;
  REQUIRE(cluster.StartHead({"--num-cpus", "2"}).exit_code == 0);
  const std::string limits = LimitsOf(cluster);
  if (limits.find("memory") == std::string::npos) {
    WARN("skipped: this node holds no memory limit (clusterd.limits: " << limits << ")");
    return;
  }
  // Two ranks on the node: rank 1 writes 512 MiB (a bytes object is filled,
  // so every page is touched), rank 0 stays well within 64 MiB.
  const std::string job = Submit(cluster, "greedy",
                                 "num_workers: 2\nmax_failures: 0\nresources_per_worker: {CPU: 1, memory: 64Mi}\n"
                                 "entrypoint: [/usr/bin/python3, -c, \"import os, time\\n"
                                 "if os.environ['RANK'] == '1': b = b'x' * (512 << 20)\\n"
                                 "time.sleep(30)\"]\n");
  JobInfo ended = WaitUntilFinal(cluster, job, 60s);
  INFO(ended.reason());
  REQUIRE(ended.state() == FAILED);
  REQUIRE(ended.reason().rfind("rank 1 was killed by signal 9: out of memory (limit 64 MiB) on node ", 0) == 0);
  REQUIRE(ended.attempts_size() == 1);
  const RankInfo& rank = ended.attempts(0).ranks(1);
  CHECK(rank.out_of_memory());
  CHECK(rank.memory_limit_bytes() == 64 << 20);
  CHECK_FALSE(ended.attempts(0).ranks(0).out_of_memory());
  // What a person reads.
  RunResult shown = cluster.Ctl({"job", job});
  INFO(shown.out);
  CHECK(shown.out.find("out of memory (limit 64 MiB)") != std::string::npos);
}

TEST_CASE("a fork bomb in a rank stops at the node's attempt_pids_max and ends with its attempt", "[limits]") {
  Cluster cluster;
  REQUIRE(cluster.StartHead({"--num-cpus", "1", "--attempt-pids-max", "24"}).exit_code == 0);
  const std::string limits = LimitsOf(cluster);
  if (limits.find("pids 24") == std::string::npos) {
    WARN("skipped: this node holds no pids limit (clusterd.limits: " << limits << ")");
    return;
  }
  const std::string pids_file = cluster.temp_dir() + "/children";
  // Forks children that sleep until fork fails, writes their pids, exits 0.
  const std::string job = Submit(cluster, "bomb",
                                 "max_failures: 0\nentrypoint: [/usr/bin/python3, -c, \"import os, time\\n"
                                 "children = []\\n"
                                 "try:\\n"
                                 "    while len(children) < 1000:\\n"
                                 "        pid = os.fork()\\n"
                                 "        if pid == 0:\\n"
                                 "            time.sleep(600)\\n"
                                 "            os._exit(0)\\n"
                                 "        children.append(pid)\\n"
                                 "except OSError as e:\\n"
                                 "    print('fork failed after', len(children), e)\\n"
                                 "open('" + pids_file + ".tmp', 'w').write(' '.join(map(str, children)))\\n"
                                 "os.rename('" + pids_file + ".tmp', '" + pids_file + "')\"]\n");
  JobInfo ended = WaitUntilFinal(cluster, job, 60s);
  INFO(ended.reason());
  REQUIRE(ended.state() == SUCCEEDED);
  const std::string logs = cluster.Ctl({"logs", job}).out;
  INFO(logs);
  REQUIRE(logs.find("fork failed after") != std::string::npos);
  std::istringstream children(Slurp(pids_file));
  int count = 0;
  std::vector<pid_t> pids;
  for (pid_t pid; children >> pid; ++count) pids.push_back(pid);
  CHECK(count > 0);
  CHECK(count < 24);  // the rank and its children, within the attempt's 24
  // The attempt is over: its children went with it.
  const bool gone = WaitFor([&] {
    for (pid_t pid : pids) {
      if (ProcessAlive(pid) && Slurp("/proc/" + std::to_string(pid) + "/cmdline").find("python3") != std::string::npos) {
        return false;
      }
    }
    return true;
  }, 30s, 50ms);
  if (!gone) {
    for (pid_t pid : pids) kill(pid, SIGKILL);
  }
  REQUIRE(gone);
}

TEST_CASE("a node without cgroups warns once at start and its labels say that it holds no limits", "[limits]") {
  Cluster cluster;
  REQUIRE(cluster.StartHead({"--num-cpus", "1", "--containment", "subreaper"}).exit_code == 0);
  CHECK(LimitsOf(cluster) == "none");
  const std::string logs = Run({"/bin/sh", "-c", "cat " + cluster.temp_dir() + "/session_latest/logs/*.log"}).out;
  INFO(logs);
  size_t warnings = 0;
  for (size_t at = logs.find("held by its keeper process alone"); at != std::string::npos;
       at = logs.find("held by its keeper process alone", at + 1)) {
    ++warnings;
  }
  CHECK(warnings == 1);
  CHECK(logs.find("limits that hold on this node: none (not: no cgroups (containment subreaper))") != std::string::npos);
  // Its jobs still run, held by the keeper alone.
  const std::string job = Submit(cluster, "plain", "max_failures: 0\nresources_per_worker: {CPU: 1, memory: 64Mi}\n"
                                                   "entrypoint: [/bin/true]\n");
  JobInfo ended = WaitUntilFinal(cluster, job, 30s);
  INFO(ended.reason());
  CHECK(ended.state() == SUCCEEDED);
}
