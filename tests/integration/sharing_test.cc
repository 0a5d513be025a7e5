// The sharing layer's parts together on a real head (docs/SHARING.md):
// users in a group under a quota, a job that borrows beyond it, and a
// pending job of another user that may preempt. The borrowing job is
// preempted first, before a running job of lower priority; the quota
// holds the group's next job back, naming its use; and neither user may
// stop the other's job.
#include <catch2/catch.hpp>

#include <string>
#include <thread>

#include "jobs_harness.h"
#include "user_tokens.h"

using namespace clusterd;
using namespace clusterd::testing;

namespace {

// A job of `cpus` CPUs that sleeps until stopped (or preempted).
std::string SubmitAs(Cluster& cluster, const std::string& token, const std::string& name, int cpus,
                     const std::string& extra = "") {
  const std::string file = WriteJobFile(
      cluster, name, "entrypoint: ['/bin/sleep', '300']\nresources_per_worker: {CPU: " + std::to_string(cpus) + "}\n" + extra);
  return Submit(cluster, file, {{"CLUSTER_TOKEN", token}});
}

JobInfo WaitForState(Cluster& cluster, const std::string& id, JobState state) {
  JobInfo job;
  WaitFor([&] {
    job = GetJob(cluster, id);
    return job.state() == state;
  }, 30s, 100ms);
  INFO(id << ": " << JobState_Name(job.state()) << ": " << job.reason());
  REQUIRE(job.state() == state);
  return job;
}

}  // namespace

TEST_CASE("a borrowing job is preempted before one of lower priority, and a group's quota holds its next job",
          "[sharing]") {
  Cluster cluster;
  REQUIRE(cluster.StartHead({"--node-ip-address", "127.0.0.1", "--num-cpus", "4", "--num-gpus", "0"}).exit_code == 0);
  const std::string alice = AddUser(cluster, "alice", {"--group", "team-a"});
  const std::string bob = AddUser(cluster, "bob");
  const std::string carol = AddUser(cluster, "carol");
  REQUIRE(cluster.Ctl({"quota", "set", "team-a", "CPU=2"}).exit_code == 0);
  REQUIRE(cluster.Ctl({"quota", "set", "bob", "CPU=2"}).exit_code == 0);

  // The 4 CPUs: alice's team at its quota and 1 CPU beyond it, borrowed;
  // carol's job of lower priority on the last.
  const std::string within = SubmitAs(cluster, alice, "within", 2);
  WaitForState(cluster, within, RUNNING);
  const std::string borrowing = SubmitAs(cluster, alice, "borrowing", 1, "borrow: true\n");
  WaitForState(cluster, borrowing, RUNNING);
  const std::string low = SubmitAs(cluster, carol, "low", 1, "priority: -1\n");
  WaitForState(cluster, low, RUNNING);

  // bob, within his quota at priority 0, may preempt either: the borrower goes.
  const std::string bobs = SubmitAs(cluster, bob, "bobs", 1);
  WaitForState(cluster, bobs, RUNNING);
  const JobInfo preempted = GetJob(cluster, borrowing);
  INFO(JobState_Name(preempted.state()) << ": " << preempted.reason());
  CHECK(preempted.preemptions() == 1);
  REQUIRE(preempted.attempts_size() >= 1);
  CHECK(preempted.attempts(0).preempted_by() == bobs);
  CHECK(GetJob(cluster, low).state() == RUNNING);
  CHECK(GetJob(cluster, low).preemptions() == 0);
  CHECK(GetJob(cluster, within).state() == RUNNING);

  // The quota holds alice's next job, which does not borrow, naming its use.
  const std::string over = SubmitAs(cluster, alice, "over", 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const JobInfo waiting = GetJob(cluster, over);
  INFO(waiting.reason());
  CHECK(waiting.state() == PENDING);
  CHECK(waiting.reason().rfind("team-a uses 2 of 2 CPUs", 0) == 0);

  // Neither may stop the other's job; each may stop their own.
  RunResult refused = cluster.Ctl({"stop", within}, std::chrono::seconds(30), {{"CLUSTER_TOKEN", bob}});
  CHECK(refused.exit_code != 0);
  CHECK(refused.err.find(within + " belongs to alice; bob may not stop it") != std::string::npos);
  refused = cluster.Ctl({"stop", bobs}, std::chrono::seconds(30), {{"CLUSTER_TOKEN", alice}});
  CHECK(refused.err.find(bobs + " belongs to bob; alice may not stop it") != std::string::npos);
  CHECK(GetJob(cluster, bobs).state() == RUNNING);
  for (const auto& [id, token] : std::vector<std::pair<std::string, std::string>>{
           {within, alice}, {borrowing, alice}, {over, alice}, {bobs, bob}, {low, carol}}) {
    CHECK(cluster.Ctl({"stop", id}, std::chrono::seconds(30), {{"CLUSTER_TOKEN", token}}).exit_code == 0);
  }
  REQUIRE(cluster.Stop().exit_code == 0);
}
