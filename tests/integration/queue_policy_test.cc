// The queue policy on a real head (docs/SHARING.md): a quota holds (a job
// over it waits, saying which quota, in `clusterctl job` and `clusterctl
// queue`), `borrow: true` lets a job run beyond it on idle room, a
// priority class the head lacks is refused naming those it has, and the
// queue lists what waits in the order it will start.
#include <catch2/catch.hpp>

#include <string>
#include <thread>

#include "jobs_harness.h"

using namespace clusterd;
using namespace clusterd::testing;

namespace {

std::string SleepJob(Cluster& cluster, const std::string& name, int cpus, const std::string& extra = "") {
  return WriteJobFile(cluster, name,
                      "entrypoint: ['/bin/sleep', '60']\nresources_per_worker: {CPU: " + std::to_string(cpus) + "}\n" +
                          extra);
}

JobInfo WaitForState(Cluster& cluster, const std::string& id, JobState state) {
  JobInfo job;
  WaitFor([&] {
    job = GetJob(cluster, id);
    return job.state() == state;
  }, 20s, 100ms);
  INFO(id << ": " << JobState_Name(job.state()) << ": " << job.reason());
  REQUIRE(job.state() == state);
  return job;
}

}  // namespace

TEST_CASE("a quota holds on a real head: a job over it waits and says so, and one with borrow: true runs beyond it",
          "[queue_policy]") {
  Cluster cluster;
  REQUIRE(cluster.StartHead({"--node-ip-address", "127.0.0.1", "--num-cpus", "4"}).exit_code == 0);
  const std::string first = Submit(cluster, SleepJob(cluster, "first", 2));
  const JobInfo running = WaitForState(cluster, first, RUNNING);
  // The cluster's one token is the admin's: its jobs are held to admin's quota.
  const std::string owner = running.owner().empty() ? "admin" : running.owner();
  RunResult set = cluster.Ctl({"quota", "set", owner, "CPU=2"});
  INFO(set.err);
  REQUIRE(set.exit_code == 0);

  const std::string over = Submit(cluster, SleepJob(cluster, "over", 1));
  // Two CPUs are idle, but the quota is used up: it waits, saying so.
  std::this_thread::sleep_for(500ms);
  const JobInfo waiting = GetJob(cluster, over);
  INFO(waiting.reason());
  CHECK(waiting.state() == PENDING);
  CHECK(waiting.reason().rfind(owner + " uses 2 of 2 CPUs", 0) == 0);
  const QueueListReply queue = ParseJson<QueueListReply>(cluster.Ctl({"queue", "--json"}));
  REQUIRE(queue.jobs_size() == 1);
  CHECK(queue.jobs(0).job_id() == over);
  CHECK(queue.jobs(0).reason() == waiting.reason());
  RunResult table = cluster.Ctl({"queue"});
  CHECK(table.out.find(over) != std::string::npos);

  // With borrow: true the same ask runs on the idle room.
  const std::string borrowing = Submit(cluster, SleepJob(cluster, "borrowing", 1, "borrow: true\n"));
  WaitForState(cluster, borrowing, RUNNING);
  CHECK(GetJob(cluster, over).state() == PENDING);
  const ListQuotasReply quotas = ParseJson<ListQuotasReply>(cluster.Ctl({"quota", "list", "--json"}));
  REQUIRE(quotas.quotas_size() == 1);
  CHECK(quotas.quotas(0).used().amounts().at("CPU") == 3);
  RunResult listed = cluster.Ctl({"quota", "list"});
  CHECK(listed.out.find("3 of 2") != std::string::npos);

  // The quota raised, the waiting job starts.
  REQUIRE(cluster.Ctl({"quota", "set", owner, "CPU=4"}).exit_code == 0);
  WaitForState(cluster, over, RUNNING);
  for (const std::string& id : {first, over, borrowing}) cluster.Ctl({"stop", id});
}

TEST_CASE("a real head resolves priority classes, refuses one it lacks, and keeps its quotas across a restart",
          "[queue_policy][restart]") {
  Cluster cluster;
  // The flag once per class (its comma-separated form is PriorityClasses' unit test's).
  const std::vector<std::string> flags = {"--node-ip-address", "127.0.0.1", "--num-cpus",       "1",
                                          "--priority-class",  "high=100",  "--priority-class", "low=-10"};
  REQUIRE(cluster.StartHead(flags).exit_code == 0);
  const std::string blocker = Submit(cluster, SleepJob(cluster, "blocker", 1));
  WaitForState(cluster, blocker, RUNNING);
  const std::string low = Submit(cluster, SleepJob(cluster, "low", 1, "priority: low\n"));
  const std::string high = Submit(cluster, SleepJob(cluster, "high", 1, "priority: high\n"));
  CHECK(GetJob(cluster, high).spec().priority() == 100);
  RunResult unknown = cluster.Ctl({"submit", SleepJob(cluster, "urgent", 1, "priority: urgent\n")});
  INFO(unknown.err);
  CHECK(unknown.exit_code != 0);
  CHECK(unknown.err.find("no priority class 'urgent' on this cluster (known: high (100), low (-10))") !=
        std::string::npos);
  const QueueListReply queue = ParseJson<QueueListReply>(cluster.Ctl({"queue", "--json"}));
  REQUIRE(queue.jobs_size() == 2);
  CHECK(queue.jobs(0).job_id() == high);
  CHECK(queue.jobs(1).job_id() == low);
  CHECK(queue.jobs(1).reason().find("it has priority 100, higher priorities start first") != std::string::npos);

  REQUIRE(cluster.Ctl({"quota", "set", "team-a", "GPU=8", "CPU=64"}).exit_code == 0);
  REQUIRE(cluster.Stop().exit_code == 0);
  REQUIRE(cluster.StartHead(flags).exit_code == 0);
  const ListQuotasReply quotas = ParseJson<ListQuotasReply>(cluster.Ctl({"quota", "list", "--json"}));
  REQUIRE(quotas.quotas_size() == 1);
  CHECK(quotas.quotas(0).name() == "team-a");
  CHECK(quotas.quotas(0).limit().amounts().at("GPU") == 8);
  CHECK(quotas.quotas(0).limit().amounts().at("CPU") == 64);
}
