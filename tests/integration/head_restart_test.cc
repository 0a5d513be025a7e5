// A head killed (or stopped) and restarted on real processes: it keeps its
// history and adopts a job that kept running, loses no job it acknowledged
// in a burst, and counts the ranks that exited while it was down.
#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <atomic>
#include <cstdlib>
#include <future>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>

#include "jobs_harness.h"

using namespace clusterd;
using namespace clusterd::testing;
using namespace std::chrono_literals;

// Killed or stopped (clusterd stop on its machine, systemctl restart):
// either way the workers' ranks run on and the head started again adopts
// them. A stopping head closes the agents' streams itself; that must not
// count them DEAD and fail the attempt.
TEST_CASE("a head SIGKILLed or stopped and restarted keeps job history and adopts a job that kept running",
          "[jobs][journal]") {
  const int signal_number = GENERATE(SIGKILL, SIGTERM);
  Cluster cluster;
  // The head runs no ranks, so the job's processes live on the workers.
  StartThreeNodes(cluster, {"--num-cpus", "0", "--num-gpus", "0"});
  JobInfo done = WaitEnd(cluster, Submit(cluster, WriteJobFile(cluster, "early", "entrypoint: 'true'\nnum_workers: 2\n")));
  REQUIRE(done.state() == SUCCEEDED);

  std::string flag = cluster.temp_dir() + "/go";
  std::string id = Submit(cluster, WriteJobFile(cluster, "longrun",
                                                "entrypoint: while [ ! -e " + flag + " ]; do sleep 0.1; done\n"
                                                "num_workers: 2\nplacement: SPREAD\n"));
  REQUIRE(WaitFor([&] { return GetJob(cluster, id).attempts(0).ranks(1).pid() > 0; }, 20s));

  cluster.KillHead(signal_number);
  REQUIRE(cluster.StartHead({"--num-cpus", "0", "--num-gpus", "0", "--heartbeat-ms", "200",
                             "--node-timeout-ms", "1000"}).exit_code == 0);

  REQUIRE(GetJob(cluster, done.job_id()).state() == SUCCEEDED);  // history kept
  // Workers reconnect by themselves and report their ranks.
  REQUIRE(WaitFor([&] { return cluster.StateOf("w1") == ALIVE && cluster.StateOf("w2") == ALIVE; }, 15s));
  std::ofstream(flag) << "go";
  JobInfo adopted = WaitEnd(cluster, id);
  INFO("job " << id << ": " << adopted.reason());
  REQUIRE(adopted.state() == SUCCEEDED);
  REQUIRE(adopted.attempts_size() == 1);  // adopted, not restarted
}

TEST_CASE("a head SIGKILLed during a burst of submits loses no job it acknowledged", "[jobs][journal][durability]") {
  Cluster cluster;
  // No node can run them: the jobs only have to be recorded.
  REQUIRE(cluster.StartHead({"--num-cpus", "0", "--num-gpus", "0"}).exit_code == 0);
  const std::string file = WriteJobFile(cluster, "burst", "entrypoint: 'true'\n");
  pid_t head_pid = 0;
  for (pid_t pid : cluster.DaemonPids()) head_pid = pid;
  REQUIRE(head_pid > 0);

  // Four submitters at once, as a DVC pipeline's stages or a script's loop
  // would: each submit that succeeded was acknowledged by the head. (Catch's
  // assertions are for this thread only: the submitters keep what they saw.)
  std::mutex mu;
  std::vector<RunResult> acknowledged;
  std::atomic<bool> head_killed{false};
  std::vector<std::thread> submitters;
  for (int t = 0; t < 4; ++t) {
    submitters.emplace_back([&] {
      while (!head_killed) {
        RunResult r = cluster.Ctl({"submit", file, "--json", "--timeout-ms", "3000"}, 10s);
        if (r.exit_code != 0) continue;
        std::lock_guard<std::mutex> lock(mu);
        acknowledged.push_back(r);
      }
    });
  }
  REQUIRE(WaitFor([&] {
    std::lock_guard<std::mutex> lock(mu);
    return acknowledged.size() >= 40;
  }, 60s));
  kill(head_pid, SIGKILL);
  head_killed = true;
  for (auto& t : submitters) t.join();
  REQUIRE(WaitFor([&] { return !ProcessAlive(head_pid); }, 5s));

  REQUIRE(cluster.StartHead({"--num-cpus", "0", "--num-gpus", "0"}).exit_code == 0);
  std::set<std::string> recorded;
  const ListJobsReply jobs = ParseJson<ListJobsReply>(cluster.Ctl({"jobs", "--json"}));
  for (const JobInfo& job : jobs.jobs()) recorded.insert(job.job_id());
  INFO(acknowledged.size() << " acknowledged, " << recorded.size() << " recorded");
  for (const RunResult& submitted : acknowledged) {
    const std::string id = SubmittedJobId(submitted);
    INFO("acknowledged " << id);
    REQUIRE(recorded.count(id) == 1);
  }
}

// An agent whose channel saw the head refuse must try again as soon as the
// head is back, not fail at once with that old error until gRPC's own
// backoff lets it try: after a head outage of a few seconds the workers
// would come back about 10 s after the head did, at or past its adoption
// deadline, and a job that had kept running would fail with "ranks did not
// come back" (bench/chaos's head_kill fault makes such outages).
TEST_CASE("after a 3 s head outage the workers rejoin in time for the restarted head to adopt a running job",
          "[jobs][journal]") {
  Cluster cluster;
  StartThreeNodes(cluster, {"--num-cpus", "0", "--num-gpus", "0"});
  std::string flag = cluster.temp_dir() + "/go";
  std::string id = Submit(cluster, WriteJobFile(cluster, "outage",
                                                "entrypoint: while [ ! -e " + flag + " ]; do sleep 0.1; done\n"
                                                "num_workers: 2\nplacement: SPREAD\n"));
  REQUIRE(WaitFor([&] { return GetJob(cluster, id).attempts(0).ranks(1).pid() > 0; }, 20s));
  cluster.KillHead();
  // Long enough for the agents' backoff to reach its cap while the head is gone.
  std::this_thread::sleep_for(3s);
  REQUIRE(cluster.StartHead({"--num-cpus", "0", "--num-gpus", "0"}).exit_code == 0);
  REQUIRE(WaitFor([&] { return cluster.StateOf("w1") == ALIVE && cluster.StateOf("w2") == ALIVE; }, 20s, 100ms));
  std::ofstream(flag) << "go";
  JobInfo adopted = WaitEnd(cluster, id);
  INFO(adopted.reason());
  REQUIRE(adopted.state() == SUCCEEDED);
  REQUIRE(adopted.attempts_size() == 1);  // adopted, not failed and not restarted
}

// Ranks that end while the head is down are not live when their agents
// register again: the exits the agents kept must count even though no node
// holds those slots yet, or both jobs would fail at the adoption deadline
// with "ranks did not come back after the head restarted".
TEST_CASE("ranks that exit while the head is down count once the head is back: 0 succeeds, 3 fails with its code",
          "[jobs][journal]") {
  Cluster cluster;
  StartThreeNodes(cluster, {"--num-cpus", "0", "--num-gpus", "0"});
  std::string go = cluster.temp_dir() + "/go";
  auto job = [&](const std::string& name, int code) {
    return Submit(cluster, WriteJobFile(cluster, name,
                                        "entrypoint: while [ ! -e " + go + " ]; do sleep 0.1; done; exit " +
                                            std::to_string(code) + "\nnum_workers: 2\nplacement: SPREAD\n"));
  };
  std::string ok = job("ends-ok", 0), bad = job("ends-3", 3);
  REQUIRE(WaitFor([&] { return GetJob(cluster, ok).attempts(0).ranks(1).pid() > 0; }, 20s));
  REQUIRE(WaitFor([&] { return GetJob(cluster, bad).attempts(0).ranks(1).pid() > 0; }, 20s));
  cluster.KillHead();
  std::ofstream(go) << "go";  // every rank ends while the head is away
  std::this_thread::sleep_for(1s);
  REQUIRE(cluster.StartHead({"--num-cpus", "0", "--num-gpus", "0"}).exit_code == 0);
  JobInfo succeeded = WaitEnd(cluster, ok), failed = WaitEnd(cluster, bad);
  INFO(succeeded.reason() << " / " << failed.reason());
  REQUIRE(succeeded.state() == SUCCEEDED);
  REQUIRE(succeeded.attempts_size() == 1);
  REQUIRE(failed.state() == FAILED);
  REQUIRE(failed.reason().find("exited with code 3") != std::string::npos);
}

// Neither an array's `submit --follow` nor a job's may give up on the head:
// not at its first refusal, nor by a channel's reconnect backoff grown past
// the outage window while the head is back.
TEST_CASE("submit --follow of a job and of an array ride out a head that is down for 12 s", "[jobs][journal]") {
  Cluster cluster;
  StartThreeNodes(cluster, {"--num-cpus", "0", "--num-gpus", "0"});
  const std::string dir = cluster.temp_dir();
  const std::string wait = "entrypoint: touch " + dir + "/started.$CLUSTER_JOB_ID; while [ ! -e " + dir +
                           "/go ]; do sleep 0.1; done; echo finished\n";
  const std::string one = WriteJobFile(cluster, "followed", wait);
  const std::string array = WriteJobFile(cluster, "followed-array", wait + "array: {count: 2}\n");
  auto single = std::async(std::launch::async, [&] { return cluster.Ctl({"submit", one, "--follow"}, 120s); });
  auto many = std::async(std::launch::async, [&] { return cluster.Ctl({"submit", array, "--follow"}, 120s); });
  auto started = [&] {
    RunResult listed = Run({"/bin/sh", "-c", "ls " + dir + " | grep -c '^started\\.'"});
    return std::atoi(listed.out.c_str());
  };
  REQUIRE(WaitFor([&] { return started() == 3; }, 30s, 100ms));
  cluster.KillHead();
  std::this_thread::sleep_for(12s);
  REQUIRE(cluster.StartHead({"--num-cpus", "0", "--num-gpus", "0", "--heartbeat-ms", "200", "--node-timeout-ms",
                             "1000"}).exit_code == 0);
  const auto back = std::chrono::steady_clock::now();
  std::ofstream(dir + "/go") << "go";
  RunResult followed = single.get();
  WARN("the job's --follow ended " << MillisSince(back) << " ms after the head was back");
  RunResult followed_array = many.get();
  INFO(followed.out << followed.err << "\n---\n" << followed_array.out << followed_array.err);
  REQUIRE(followed.exit_code == 0);
  REQUIRE(followed.out.find("finished") != std::string::npos);
  REQUIRE(followed.err.find("trying again for 60 s") != std::string::npos);
  REQUIRE(followed_array.exit_code == 0);
  REQUIRE(followed_array.err.find("trying again for 60 s") != std::string::npos);
  REQUIRE(MillisSince(back) < 20'000);  // an outer bound for a loaded machine; the figure is the WARN above
}
