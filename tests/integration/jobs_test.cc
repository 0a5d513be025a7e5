// Jobs on real processes: the torchrun environment of a 4-rank SPREAD gang,
// restart on failure, stop, a worker killed mid-job. A head killed and
// restarted: head_restart_test.cc.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <google/protobuf/util/json_util.h>

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "jobs_harness.h"

using namespace clusterd;
using namespace clusterd::testing;
using namespace std::chrono_literals;

TEST_CASE("a 4-rank SPREAD job gets a consistent torchrun environment", "[jobs]") {
  Cluster cluster;
  StartThreeNodes(cluster);
  std::string out = cluster.temp_dir() + "/env";
  REQUIRE(Run({"/bin/mkdir", out}).exit_code == 0);
  std::string file = WriteJobFile(cluster, "envdump",
                                  "entrypoint: env > " + out + "/rank-$RANK.env\n"
                                  "num_workers: 4\n"
                                  "resources_per_worker: {CPU: 1, GPU: 1}\n"
                                  "placement: SPREAD\n"
                                  "env: {MY_SETTING: '42'}\n"
                                  "env_passthrough: ['DVC_*']\n");
  // The submitter's DVC_* variables reach every rank; others do not.
  JobInfo job = WaitEnd(cluster, Submit(cluster, file, {{"DVC_EXP_NAME", "exp-7"}, {"OTHER_SECRET", "no"}}));
  REQUIRE(job.state() == SUCCEEDED);
  const AttemptInfo& attempt = job.attempts(0);
  REQUIRE(attempt.ranks_size() == 4);

  std::set<std::string> ranks, ports, addrs;
  std::map<std::string, std::set<std::string>> gpus_by_node;
  for (int rank = 0; rank < 4; ++rank) {
    auto env = ReadEnv(out + "/rank-" + std::to_string(rank) + ".env");
    const RankInfo& placed = attempt.ranks(rank);
    ranks.insert(env["RANK"]);
    REQUIRE(env["WORLD_SIZE"] == "4");
    REQUIRE(env["LOCAL_RANK"] == std::to_string(placed.local_rank()));
    REQUIRE(env["NODE_RANK"] == std::to_string(placed.node_rank()));
    REQUIRE(env["MY_SETTING"] == "42");
    REQUIRE(env["DVC_EXP_NAME"] == "exp-7");
    REQUIRE(env.count("OTHER_SECRET") == 0);
    REQUIRE(env["CLUSTER_JOB_ID"] == job.job_id());
    REQUIRE(env["CLUSTER_ATTEMPT"] == "0");
    ports.insert(env["MASTER_PORT"]);
    addrs.insert(env["MASTER_ADDR"]);
    REQUIRE(env.count("CUDA_VISIBLE_DEVICES"));
    REQUIRE(gpus_by_node[placed.node_name()].insert(env["CUDA_VISIBLE_DEVICES"]).second);  // no overlap
  }
  REQUIRE(ranks == std::set<std::string>{"0", "1", "2", "3"});
  REQUIRE(ports.size() == 1);
  REQUIRE(std::stoi(*ports.begin()) > 0);
  REQUIRE(addrs == std::set<std::string>{"127.0.0.1"});
  REQUIRE(gpus_by_node.size() == 3);  // SPREAD over all three nodes
  // Ranks are numbered contiguously per node, NODE_RANK counts nodes.
  for (int rank = 1; rank < 4; ++rank) {
    const RankInfo& a = attempt.ranks(rank - 1);
    const RankInfo& b = attempt.ranks(rank);
    if (a.node_name() == b.node_name()) {
      REQUIRE(b.local_rank() == a.local_rank() + 1);
    } else {
      REQUIRE(b.node_rank() == a.node_rank() + 1);
      REQUIRE(b.local_rank() == 0);
    }
  }
}

TEST_CASE("rank 2 failing on attempt 0 is retried with max_failures 1 and fails the job with max_failures 0", "[jobs]") {
  Cluster cluster;
  StartThreeNodes(cluster);
  std::string body =
      "entrypoint: |\n"
      "  if [ \"$RANK\" = 2 ] && [ \"$CLUSTER_ATTEMPT\" = 0 ]; then echo rank two gives up; exit 1; fi\n"
      "  sleep 0.3\n"
      "num_workers: 4\n"
      "placement: SPREAD\n";
  JobInfo retried = WaitEnd(cluster, Submit(cluster, WriteJobFile(cluster, "retry", body + "max_failures: 1\n")));
  REQUIRE(retried.state() == SUCCEEDED);
  REQUIRE(retried.attempts_size() == 2);
  REQUIRE(retried.attempts(0).failure_reason().rfind("rank 2 exited with code 1 on node ", 0) == 0);
  // Following a job (as a DVC stage or Makefile would) exits 0 only for SUCCEEDED.
  REQUIRE(cluster.Ctl({"logs", retried.job_id(), "-f"}).exit_code == 0);

  JobInfo failed = WaitEnd(cluster, Submit(cluster, WriteJobFile(cluster, "final", body + "max_failures: 0\n")));
  REQUIRE(failed.state() == FAILED);
  REQUIRE(failed.attempts_size() == 1);
  REQUIRE(failed.reason().rfind("rank 2 exited with code 1 on node ", 0) == 0);
  REQUIRE(failed.reason().find("rank two gives up") != std::string::npos);  // its last log lines
  REQUIRE(cluster.Ctl({"logs", failed.job_id(), "-f"}).exit_code == 1);

  // The failing rank's output reached the head's log store.
  RunResult logs = cluster.Ctl({"logs", failed.job_id(), "--rank", "2"});
  REQUIRE(logs.exit_code == 0);
  REQUIRE(logs.out.find("rank two gives up") != std::string::npos);
  // A rank the job never had is named, not an empty log.
  RunResult none = cluster.Ctl({"logs", failed.job_id(), "--rank", "4"});
  REQUIRE(none.exit_code == 1);
  REQUIRE(none.err == "clusterctl: job " + failed.job_id() + " has ranks 0..3, not 4\n");
}

TEST_CASE("an entrypoint that cannot be executed fails the job with the reason, and the next job runs", "[jobs]") {
  Cluster cluster;
  StartThreeNodes(cluster);
  const std::string missing = cluster.temp_dir() + "/no-such-program";
  JobInfo failed = WaitEnd(cluster, Submit(cluster, WriteJobFile(cluster, "noexec",
                                                                 "entrypoint: [" + missing + ", --flag]\n"
                                                                 "num_workers: 2\nplacement: SPREAD\n")));
  INFO(failed.reason());
  REQUIRE(failed.state() == FAILED);
  REQUIRE(failed.reason().find("cannot execute the entrypoint: No such file or directory ('" + missing + "' in '") !=
          std::string::npos);
  // A file without the execute bit: EACCES, named as such.
  const std::string plain = cluster.temp_dir() + "/not-executable";
  std::ofstream(plain) << "echo hi\n";
  JobInfo refused = WaitEnd(cluster, Submit(cluster, WriteJobFile(cluster, "noperm", "entrypoint: [" + plain + "]\n")));
  REQUIRE(refused.state() == FAILED);
  REQUIRE(refused.reason().find("cannot execute the entrypoint: Permission denied") != std::string::npos);
  // The launchers that reported those are still there for the next job.
  JobInfo fine = WaitEnd(cluster, Submit(cluster, WriteJobFile(cluster, "fine", "entrypoint: echo ok\nnum_workers: 3\n"
                                                                              "placement: SPREAD\n")));
  REQUIRE(fine.state() == SUCCEEDED);
}

TEST_CASE("a node's 100 ranks start as one batch through its launcher, each with its own rank and log", "[jobs]") {
  // More ranks than the agent keeps in flight to its launcher (64): the
  // batch goes out in windows, and every answer finds its rank.
  Cluster cluster;
  REQUIRE(cluster.StartHead({"--num-cpus", "100"}).exit_code == 0);
  const std::string out = cluster.temp_dir() + "/ranks";
  REQUIRE(Run({"/bin/mkdir", out}).exit_code == 0);
  JobInfo job = WaitEnd(cluster, Submit(cluster, WriteJobFile(cluster, "hundred",
                                                              "entrypoint: echo \"rank $RANK\"; touch " + out +
                                                                  "/$RANK-$LOCAL_RANK\nnum_workers: 100\n")),
                        120s);
  INFO(job.reason());
  REQUIRE(job.state() == SUCCEEDED);
  std::set<std::string> seen;
  for (const auto& entry : std::filesystem::directory_iterator(out)) seen.insert(entry.path().filename().string());
  REQUIRE(seen.size() == 100);
  for (int rank = 0; rank < 100; ++rank) REQUIRE(seen.count(std::to_string(rank) + "-" + std::to_string(rank)));
  // Each rank's own output reached the head's log of that rank.
  for (int rank : {0, 63, 64, 99}) {
    RunResult logs = cluster.Ctl({"logs", job.job_id(), "--rank", std::to_string(rank)});
    REQUIRE(logs.out.find("rank " + std::to_string(rank) + "\n") != std::string::npos);
    // The attempt's banner opens it, written with the rank's first output.
    REQUIRE(logs.out.find("--- attempt 0 on ") < logs.out.find("rank " + std::to_string(rank) + "\n"));
  }
}

// The daemon on the head's node holds the dashboard's listening socket,
// opened without close-on-exec: a rank that inherited it could accept the
// dashboard's connections, and the token they carry.
TEST_CASE("a rank on the head's node holds only its stdin stdout and stderr of all the daemon's descriptors",
          "[jobs]") {
  Cluster cluster;
  REQUIRE(cluster.StartHead({"--num-cpus", "1"}).exit_code == 0);
  const std::string fds = cluster.temp_dir() + "/fds";
  // `; true`: the shell must not exec ls, whose own reading of /proc adds one.
  std::string file = WriteJobFile(cluster, "fds", "entrypoint: ls -l /proc/$$/fd > " + fds + "; true\n");
  JobInfo job = WaitEnd(cluster, Submit(cluster, file));
  REQUIRE(job.state() == SUCCEEDED);
  // "lr-x------ 1 u g 64 Nov 27 16:16 0 -> /dev/null", one per descriptor.
  std::istringstream lines(Slurp(fds));
  std::map<int, std::string> open;
  for (std::string line; std::getline(lines, line);) {
    const size_t arrow = line.find(" -> ");
    if (arrow == std::string::npos) continue;
    const size_t name = line.rfind(' ', arrow - 1) + 1;
    open[std::stoi(line.substr(name, arrow - name))] = line.substr(arrow + 4);
  }
  INFO(Slurp(fds));
  REQUIRE(open.count(0));
  REQUIRE(open.count(1));
  REQUIRE(open.count(2));
  for (const auto& [fd, target] : open) {
    // dash saves the stdout it redirects for ls as 10; nothing else may be open.
    if (fd > 2) REQUIRE(fd == 10);
  }
}

TEST_CASE("stop leaves no process of the job", "[jobs]") {
  Cluster cluster;
  StartThreeNodes(cluster);
  // A shell with a child: the whole process group must go.
  std::string id = Submit(cluster, WriteJobFile(cluster, "sleeper",
                                                "entrypoint: sleep 300 & sleep 300; wait\n"
                                                "num_workers: 3\nplacement: SPREAD\n"));
  std::vector<pid_t> pids;
  REQUIRE(WaitFor([&] {
    JobInfo job = GetJob(cluster, id);
    pids.clear();
    for (const auto& r : job.attempts(0).ranks()) {
      if (r.pid() > 0) pids.push_back(r.pid());
    }
    return pids.size() == 3;
  }, 20s));
  for (pid_t pid : pids) REQUIRE(ProcessAlive(pid));
  REQUIRE(cluster.Ctl({"stop", id}).exit_code == 0);
  JobInfo job = WaitEnd(cluster, id, 30s);
  REQUIRE(job.state() == STOPPED);
  for (pid_t pid : pids) {
    REQUIRE_FALSE(ProcessAlive(pid));
    REQUIRE(kill(-pid, 0) != 0);  // nor anything of its group
  }
}

TEST_CASE("a worker SIGKILLed mid-job leads to a restart on the remaining nodes", "[jobs]") {
  Cluster cluster;
  StartThreeNodes(cluster);
  std::string id = Submit(cluster, WriteJobFile(cluster, "survivor",
                                                "entrypoint: if [ \"$CLUSTER_ATTEMPT\" = 1 ]; then exit 0; fi; sleep 300\n"
                                                "num_workers: 3\nplacement: SPREAD\nmax_failures: 1\n"));
  REQUIRE(WaitFor([&] {
    JobInfo job = GetJob(cluster, id);
    int started = 0;
    for (const auto& r : job.attempts(0).ranks()) started += r.pid() > 0;
    return started == 3;
  }, 20s));
  kill(cluster.WorkerPid("w1"), SIGKILL);
  JobInfo job = WaitEnd(cluster, id);
  REQUIRE(job.state() == SUCCEEDED);
  REQUIRE(job.attempts_size() == 2);
  REQUIRE(job.attempts(0).failure_reason().rfind("node w1 died", 0) == 0);
  for (const auto& r : job.attempts(1).ranks()) REQUIRE(r.node_name() != "w1");
}

// Attempts quicker than a poll leave the state RESTARTING from one look to
// the next: every retry must still show, not only the first.
TEST_CASE("logs -f says each retry of a job whose attempts fail at once", "[jobs]") {
  Cluster cluster;
  REQUIRE(cluster.StartHead({"--num-cpus", "1"}).exit_code == 0);
  const std::string id = Submit(cluster, WriteJobFile(cluster, "crashy",
                                                      "entrypoint: exit 5\n"
                                                      "max_failures: 3\n"
                                                      "restart_delay: {initial: 1s, max: 1s, factor: 1}\n"));
  RunResult followed = cluster.Ctl({"logs", id, "-f"}, std::chrono::seconds(60));
  INFO(followed.err);
  REQUIRE(followed.exit_code == 1);
  for (int attempt = 0; attempt < 3; ++attempt) {
    REQUIRE(followed.err.find(fmt::format("Job {} is RESTARTING: retrying in 1s after attempt {} failed", id, attempt)) !=
            std::string::npos);
  }
}

// `sh -c` (what a string entrypoint runs in) dies of the stop's SIGTERM at
// once; its trainer, still saving within the grace period, must not be
// SIGKILLed with it as a leftover.
TEST_CASE("a string entrypoint's program gets the stop's grace period to save before it is killed", "[jobs]") {
  Cluster cluster;
  REQUIRE(cluster.StartHead({"--num-cpus", "1"}).exit_code == 0);
  const std::string marker = cluster.temp_dir() + "/saved";
  const std::string script = cluster.temp_dir() + "/trainer.sh";
  std::ofstream(script) << "#!/bin/bash\n"
                           "trap 'sleep 1; echo saved > " + marker + "; exit 0' TERM\n"
                           "echo ready\n"
                           "sleep 300 & wait\n";
  chmod(script.c_str(), 0755);
  // Two commands: the shell stays the rank's process, the trainer its child.
  const std::string id = Submit(cluster, WriteJobFile(cluster, "saver", "entrypoint: true; " + script + "\n"));
  REQUIRE(WaitFor([&] { return cluster.Ctl({"logs", id}).out.find("ready") != std::string::npos; }, 20s));
  REQUIRE(cluster.Ctl({"stop", id}).exit_code == 0);
  REQUIRE(WaitEnd(cluster, id, 30s).state() == STOPPED);
  REQUIRE(WaitFor([&] { return std::ifstream(marker).good(); }, 10s));  // within the 5 s grace
  REQUIRE(WaitFor([&] { return Run({"/usr/bin/pgrep", "-f", script}).exit_code == 1; }, 10s));
}
