// Arrays through HeadCore with fake agents: one submit makes count jobs,
// each told its index, at most max_concurrent running, the others waiting
// aside so that other jobs pass them; listing by array; bad specs.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "daemon/head/job_arrays.h"
#include "head_harness.h"
#include "job_table_fixture.h"

using namespace clusterd;
using namespace clusterd::testing;

namespace {

SubmitJobRequest ArrayRequest(Harness& h, int count, int max_concurrent) {
  SubmitJobRequest request = h.Request(1, 1, PACK);
  request.mutable_spec()->mutable_array()->set_count(count);
  request.mutable_spec()->mutable_array()->set_max_concurrent(max_concurrent);
  return request;
}

// Submits an array that must be accepted; its id.
std::string SubmitArray(Harness& h, int count, int max_concurrent) {
  auto submitted = h.head->jobs().Submit(ArrayRequest(h, count, max_concurrent));
  REQUIRE(submitted.ok());
  return *submitted;
}

std::vector<JobInfo> ArrayJobs(Harness& h, const std::string& array_id) {
  ListJobsRequest request;
  request.set_array_id(array_id);
  auto page = h.head->jobs().ListPage(request);
  REQUIRE(page.ok());
  return {page->jobs().begin(), page->jobs().end()};
}

int CountIn(const std::vector<JobInfo>& jobs, JobState state) {
  return static_cast<int>(std::count_if(jobs.begin(), jobs.end(), [&](const JobInfo& j) { return j.state() == state; }));
}

}  // namespace

TEST_CASE("an array runs at most max_concurrent of its jobs, each told its index, and others pass its waiting ones", "[jobs][array]") {
  QuietLogs quiet;
  Harness h;
  h.AddNode("a", 8);
  const std::string array_id = SubmitArray(h, 5, 2);

  std::vector<JobInfo> jobs = ArrayJobs(h, array_id);
  REQUIRE(jobs.size() == 5);
  REQUIRE(jobs[0].job_id() == array_id);  // the array is named after its first job
  for (int i = 0; i < 5; ++i) {
    CHECK(jobs[i].spec().array_id() == array_id);
    CHECK(jobs[i].spec().array_index() == i);
  }
  CHECK(CountIn(jobs, RUNNING) == 2);
  CHECK(CountIn(jobs, PENDING) == 3);
  CHECK(jobs[2].reason() == "waiting: array " + array_id + " runs at most 2 of its jobs at once (max_concurrent)");

  // A job submitted after the array is not held behind its waiting jobs.
  std::string other = h.Submit(1, 1, PACK);
  CHECK(h.Job(other).state() == RUNNING);

  // Each rank is told where it stands in the array.
  h.AnswerPort("a", 29500);
  std::vector<LaunchRanks> launches = h.Launches("a");
  REQUIRE(launches.size() == 3);
  auto env = EnvOf(launches[1], 0);
  CHECK(env["CLUSTER_ARRAY_ID"] == array_id);
  CHECK(env["CLUSTER_ARRAY_INDEX"] == "1");
  CHECK(env["CLUSTER_ARRAY_COUNT"] == "5");
  CHECK(EnvOf(launches[2], 0).count("CLUSTER_ARRAY_ID") == 0);  // the other job is in no array

  // One ends: the next in index order starts, still two at once.
  h.Exit("a", jobs[0].job_id(), 0, 0, 0);
  jobs = ArrayJobs(h, array_id);
  CHECK(jobs[0].state() == SUCCEEDED);
  CHECK(jobs[2].state() == RUNNING);
  CHECK(CountIn(jobs, RUNNING) == 2);
  for (const std::string& id : {jobs[1].job_id(), jobs[2].job_id()}) h.Exit("a", id, 0, 0, 0);
  h.AnswerPort("a", 29501);
  jobs = ArrayJobs(h, array_id);
  CHECK(jobs[3].state() == RUNNING);
  CHECK(jobs[4].state() == RUNNING);
  for (const std::string& id : {jobs[3].job_id(), jobs[4].job_id()}) h.Exit("a", id, 0, 0, 0);
  CHECK(CountIn(ArrayJobs(h, array_id), SUCCEEDED) == 5);
}

TEST_CASE("an array without max_concurrent runs as many as fit, and a stopped waiting job never starts", "[jobs][array]") {
  QuietLogs quiet;
  Harness h;
  h.AddNode("a", 3);
  std::vector<JobInfo> jobs = ArrayJobs(h, SubmitArray(h, 4, 0));
  CHECK(CountIn(jobs, RUNNING) == 3);  // what the node holds
  REQUIRE(jobs[3].state() == PENDING);
  REQUIRE(h.head->jobs().Stop(jobs[3].job_id()).ok());
  h.Exit("a", jobs[0].job_id(), 0, 0, 0);
  CHECK(h.Job(jobs[3].job_id()).state() == STOPPED);
}

TEST_CASE("array specs are checked: count, max_concurrent, with tune, and an array_id from a submitter", "[jobs][array]") {
  Harness h;
  h.AddNode("a", 1);
  auto bad = [&](SubmitJobRequest request) {
    auto made = h.head->jobs().Submit(request);
    REQUIRE_FALSE(made.ok());
    return made.status().message();
  };
  CHECK(bad(ArrayRequest(h, 0, 0)) == "key 'array.count': expected an integer between 1 and 100000, got 0");
  CHECK(bad(ArrayRequest(h, 3, -1)) ==
        "key 'array.max_concurrent': expected an integer between 0 (no limit) and 100000, got -1");
  SubmitJobRequest claimed = h.Request(1, 1, PACK);
  claimed.mutable_spec()->set_array_id("job-0001");
  CHECK(bad(claimed) == "key 'array_id': set by the head for the jobs of an array, not by a submitter");
  ListJobsRequest missing;
  missing.set_array_id("job-9999");
  CHECK(h.head->jobs().ListPage(missing).status().message() == "no array 'job-9999'");
  CHECK(h.head->jobs().List().empty());
}

TEST_CASE("a waiting job of an array that is stopped does not take the place another one frees", "[jobs][array]") {
  QuietLogs quiet;
  Harness h;
  h.AddNode("a", 4);
  const std::string array_id = SubmitArray(h, 3, 1);
  std::vector<JobInfo> jobs = ArrayJobs(h, array_id);
  REQUIRE(jobs[0].state() == RUNNING);
  REQUIRE(h.head->jobs().Stop(jobs[1].job_id()).ok());  // waiting aside
  h.Exit("a", jobs[0].job_id(), 0, 0, 0);
  jobs = ArrayJobs(h, array_id);
  CHECK(jobs[1].state() == STOPPED);
  CHECK(jobs[2].state() == RUNNING);
}

// `clusterctl status` on a head with an array of 100,000 waiting got a
// demand for each (about 15 MB), and the dashboard a table row for each.
TEST_CASE("the head counts an array's alike waiting jobs as one demand", "[jobs][array][status]") {
  QuietLogs quiet;
  Harness h;
  h.AddNode("a", 1);
  SubmitJobRequest array = ArrayRequest(h, 1000, 0);
  array.mutable_spec()->set_name("many");
  REQUIRE(h.head->jobs().Submit(array).ok());  // one runs, 999 wait
  const std::string other = h.Submit(1, 1, PACK);
  ClusterStatus status = h.head->GetStatus();
  int waiting = 0;
  for (const PendingDemand& demand : status.pending()) waiting += 1 + demand.more_like_it();
  CHECK(waiting == 1000);  // 999 of the array and the other job
  // Summed up by what they ask, whatever their names: one shape, counted
  // from the first job that waits for it.
  REQUIRE(status.pending_size() == 1);
  CHECK(status.pending(0).more_like_it() == 999);
  CHECK(status.pending(0).job_id() != other);
}

// JobArrays on its own over a job table: the running count, the parking
// of a job past max_concurrent and its return to the queue's front, and
// the tally by state kept from the table's events.
TEST_CASE("an array's job past max_concurrent is parked, and goes first in the queue when one of its array ends",
          "[jobs][array]") {
  JobTableFixture f;
  JobArrays arrays(&f.table, nullptr, nullptr);
  f.table.Subscribe(&arrays);
  TrackedJob& running = f.Add(PENDING, "job-0001");
  TrackedJob& waiting = f.Add(PENDING, "job-0001");
  TrackedJob& other = f.Add();
  for (TrackedJob* job : {&running, &waiting}) job->info.mutable_spec()->mutable_array()->set_max_concurrent(1);
  REQUIRE_FALSE(arrays.ParkedByLimit(running));
  arrays.SetActive(running, true);
  f.table.SetState(running, RUNNING, "placed");
  REQUIRE(arrays.ParkedByLimit(waiting));
  REQUIRE(waiting.info.state() == PENDING);
  REQUIRE(waiting.info.reason().find("max_concurrent") != std::string::npos);
  REQUIRE_FALSE(arrays.ParkedByLimit(other));  // not an array's
  const JobArrays::Tally* tally = arrays.TallyOf("job-0001");
  REQUIRE(tally != nullptr);
  REQUIRE(tally->by_state == std::map<JobState, int>{{PENDING, 1}, {RUNNING, 1}});
  REQUIRE(arrays.Runs("job-0001"));

  f.table.queue().push_back(other.info.job_id());
  arrays.SetActive(running, false);
  f.table.SetState(running, SUCCEEDED, "done");
  REQUIRE(f.table.queue().front() == waiting.info.job_id());  // before the job queued after it
  REQUIRE(arrays.TallyOf("job-0001")->by_state == std::map<JobState, int>{{PENDING, 1}, {SUCCEEDED, 1}});
  f.table.SetState(waiting, STOPPED, "stopped");
  REQUIRE_FALSE(arrays.Runs("job-0001"));
}
