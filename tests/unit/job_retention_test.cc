// Retention through HeadCore with fake agents: the head keeps the
// max_finished_jobs finished jobs that ended last, deletes older ones at its
// tick once min_finished_job_age_s has passed (as clusterctl delete does,
// journalled), and never takes a job that is not final, an array that still
// runs, or a sweep's trial; a restarted head applies its cap to what it
// replayed.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "daemon/head/job_replay.h"
#include "daemon/head/job_arrays.h"
#include "daemon/head/job_retention.h"
#include "head_harness.h"
#include "job_table_fixture.h"

using namespace clusterd;
using namespace clusterd::testing;

namespace {

// A harness whose head keeps `keep` finished jobs, those final for `min_age_s`
// at least, with one node of 16 CPUs.
void KeepFinished(Harness& h, int64_t keep, int64_t min_age_s = 0) {
  h.config.max_finished_jobs = keep;
  h.config.min_finished_job_age_s = min_age_s;
  h.head = std::make_unique<HeadCore>(&h.clock, h.config, &h.store, &h.logs, nullptr);
  h.agents.clear();
  h.AddNode("a", 16);
}

// Submits a 1-rank job, which starts on node a at once; its id.
std::string Run(Harness& h, const std::string& sweep_id = "") {
  SubmitJobRequest request = h.Request(1, 1, PACK);
  request.mutable_spec()->set_sweep_id(sweep_id);
  auto id = h.head->jobs().Submit(request);
  REQUIRE(id.ok());
  REQUIRE(h.Job(*id).state() == RUNNING);
  return *id;
}

void Succeed(Harness& h, const std::string& id) {
  h.Exit("a", id, 0, 0, 0);
  REQUIRE(h.Job(id).state() == SUCCEEDED);
}

bool Kept(Harness& h, const std::string& id) { return h.head->jobs().Get(id).ok(); }

std::vector<std::string> Listed(Harness& h) {
  std::vector<std::string> ids;
  for (const JobInfo& job : h.head->jobs().List()) ids.push_back(job.job_id());
  return ids;
}

}  // namespace

TEST_CASE("the head keeps the max_finished_jobs finished jobs that ended last and deletes older ones at its tick once old enough and journals it",
          "[jobs][retention]") {
  QuietLogs quiet;
  Harness h;
  KeepFinished(h, 3, 60);
  const std::string old_running = Run(h);
  std::vector<std::string> done;
  for (int i = 0; i < 5; ++i) {
    done.push_back(Run(h));
    Succeed(h, done.back());
  }
  // Not before they have been final for a minute (whoever follows them sees
  // how they ended), and never in an event handler, under its caller.
  h.Advance(59'500);
  for (const std::string& id : done) REQUIRE(Kept(h, id));
  h.Advance(500);
  CHECK_FALSE(Kept(h, done[0]));
  CHECK_FALSE(Kept(h, done[1]));
  CHECK(Listed(h) == std::vector<std::string>{old_running, done[2], done[3], done[4]});
  // An unknown old id says why it may be gone.
  Status gone = h.head->jobs().Get(done[0]).status();
  CHECK(gone.code() == Status::Code::kNotFound);
  CHECK(gone.message() == "no job '" + done[0] +
                              "': the head keeps only the 3 finished jobs that ended last (--max-finished-jobs) and "
                              "has deleted older ones, with their logs and stored data");
  CHECK(h.head->jobs().Get("job-9999").status().message() == "no job 'job-9999'");
  // The deletions are in the journal: a replay has the same jobs.
  ReplayedJobs replayed = ReplayJobs(*h.store.LoadAll());
  CHECK(replayed.jobs.size() == 4);
  CHECK(replayed.jobs.count(done[0]) == 0);
  CHECK(replayed.jobs.count(done[1]) == 0);

  // The job submitted first ended last: the one that ended first goes.
  Succeed(h, old_running);
  h.Advance(60'000);
  CHECK(Listed(h) == std::vector<std::string>{old_running, done[3], done[4]});
}

TEST_CASE("an array's finished jobs stay while any of its jobs is not final and then the oldest go", "[jobs][retention]") {
  QuietLogs quiet;
  Harness h;
  KeepFinished(h, 2);
  SubmitJobRequest request = h.Request(1, 1, PACK);
  request.mutable_spec()->mutable_array()->set_count(4);
  auto array = h.head->jobs().Submit(request);
  REQUIRE(array.ok());
  std::vector<std::string> jobs = Listed(h);
  REQUIRE(jobs.size() == 4);
  for (int i = 0; i < 3; ++i) Succeed(h, jobs[i]);
  h.Advance(500);
  CHECK(Listed(h) == jobs);  // three finished, over the cap, but the array still runs

  Succeed(h, jobs[3]);
  h.Advance(500);
  CHECK(Listed(h) == std::vector<std::string>{jobs[2], jobs[3]});
  // Grouped, what is left of it is one row, counted.
  ListJobsRequest grouped;
  grouped.set_group_arrays(true);
  auto page = h.head->jobs().ListPage(grouped);
  REQUIRE(page.ok());
  REQUIRE(page->jobs_size() == 1);
  CHECK(page->jobs(0).job_id() == jobs[2]);
  REQUIRE(page->arrays_size() == 1);
  CHECK(page->arrays(0).array_id() == *array);
  REQUIRE(page->arrays(0).counts_size() == 1);
  CHECK(page->arrays(0).counts(0).state() == SUCCEEDED);
  CHECK(page->arrays(0).counts(0).count() == 2);
  // Listed by its name, which was its first job's, what is left of it.
  ListJobsRequest by_name;
  by_name.set_array_id(*array);
  auto named = h.head->jobs().ListPage(by_name);
  REQUIRE(named.ok());
  REQUIRE(named->jobs_size() == 2);
  CHECK(named->jobs(0).job_id() == jobs[2]);
  CHECK(named->jobs(1).job_id() == jobs[3]);
}

TEST_CASE("retention takes no sweep trial and no job that is not final", "[jobs][retention]") {
  QuietLogs quiet;
  Harness h;
  KeepFinished(h, 1);
  const std::string trial = Run(h, "sweep-0001");
  Succeed(h, trial);
  const std::string running = Run(h);
  std::vector<std::string> done;
  for (int i = 0; i < 3; ++i) {
    done.push_back(Run(h));
    Succeed(h, done.back());
  }
  h.Advance(500);
  CHECK(Listed(h) == std::vector<std::string>{trial, running, done[2]});
}

TEST_CASE("a head restarted with a lower max_finished_jobs deletes the oldest finished jobs it replayed",
          "[jobs][retention][journal]") {
  QuietLogs quiet;
  Harness h;
  KeepFinished(h, 0);  // keeps every job
  std::vector<std::string> done;
  for (int i = 0; i < 5; ++i) {
    done.push_back(Run(h));
    Succeed(h, done.back());
  }
  const std::string running = Run(h);
  h.Advance(500);
  REQUIRE(Listed(h).size() == 6);

  MemoryJobStore journal = h.store;
  Config config = h.config;
  config.max_finished_jobs = 2;
  FakeClock clock;
  clock.AdvanceMillis(1000);  // past the first head's clock
  LogStore logs("");
  HeadCore restarted(&clock, config, &journal, &logs, nullptr);
  REQUIRE(restarted.Restore().ok());
  REQUIRE(restarted.jobs().List().size() == 6);
  restarted.Tick();
  std::vector<std::string> kept;
  for (const JobInfo& job : restarted.jobs().List()) kept.push_back(job.job_id());
  CHECK(kept == std::vector<std::string>{done[3], done[4], running});
  CHECK(ReplayJobs(*journal.LoadAll()).jobs.size() == 3);
}

// JobRetention on its own over a job table and the arrays' tallies: what
// it deletes follows the table's events alone.
TEST_CASE("retention deletes the finished jobs that ended first beyond its cap, and an array's only once it is done",
          "[jobs][retention]") {
  JobTableFixture f;
  f.config.max_finished_jobs = 1;
  f.config.min_finished_job_age_s = 60;
  JobArrays arrays(&f.table, nullptr, nullptr);
  JobRetention retention(&f.clock, f.config, &f.table, &arrays);
  f.table.Subscribe(&arrays);
  f.table.Subscribe(&retention);
  TrackedJob& first = f.Add();
  TrackedJob& second = f.Add();
  TrackedJob& member = f.Add(PENDING, "array-1");
  TrackedJob& still_running = f.Add(RUNNING, "array-1");
  const std::string first_id = first.info.job_id(), second_id = second.info.job_id();
  const std::string member_id = member.info.job_id();
  f.table.SetState(first, SUCCEEDED, "done");
  f.clock.AdvanceMillis(1000);
  f.table.SetState(second, FAILED, "failed");
  f.table.SetState(member, SUCCEEDED, "done");
  REQUIRE_FALSE(retention.Retire());
  REQUIRE(f.table.Find(first_id) != nullptr);  // not final for a minute yet
  f.clock.AdvanceMillis(61'000);
  REQUIRE_FALSE(retention.Retire());
  REQUIRE(f.table.Find(first_id) == nullptr);
  REQUIRE(f.table.Find(second_id) != nullptr);
  REQUIRE(f.table.Find(member_id) != nullptr);  // its array still runs
  REQUIRE(retention.UnknownJob(first_id).message().find("--max-finished-jobs") != std::string::npos);
  f.table.SetState(still_running, STOPPED, "stopped");
  f.clock.AdvanceMillis(61'000);
  retention.Retire();
  // The array's jobs became retirable together, with its last one: only
  // the one that ended last of all is kept.
  REQUIRE(f.table.Find(second_id) == nullptr);
  REQUIRE(f.table.Find(member_id) == nullptr);
  REQUIRE(f.table.size() == 1);
}
