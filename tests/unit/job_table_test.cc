// The job table on its own: the events it gives the job concerns (a job
// added, its state set, its removal), in the order they subscribed and
// only once the journal holds a removal, and the indexes it keeps itself.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "daemon/head/job_replay.h"
#include "job_table_fixture.h"

using namespace clusterd;
using namespace clusterd::testing;

namespace {

// Writes down every event it is told, named by `name`.
struct Recorder : JobEvents {
  Recorder(std::string name, std::vector<std::string>* heard) : name(std::move(name)), heard(heard) {}
  void OnJobAdded(TrackedJob& job) override { heard->push_back(name + " added " + job.info.job_id()); }
  void OnStateChanged(TrackedJob& job, JobState from) override {
    heard->push_back(name + " " + JobStateName(from) + "->" + JobStateName(job.info.state()) + " " +
                     job.info.reason());
  }
  void OnJobRemoved(const TrackedJob& job) override { heard->push_back(name + " removed " + job.info.job_id()); }
  std::string name;
  std::vector<std::string>* heard;
};

}  // namespace

TEST_CASE("the job table tells its listeners of each job added, state set and removal, in the order they subscribed",
          "[jobs][table]") {
  JobTableFixture f;
  std::vector<std::string> heard;
  Recorder first("first", &heard), second("second", &heard);
  f.table.Subscribe(&first);
  f.table.Subscribe(&second);
  TrackedJob& job = f.Add();
  const std::string id = job.info.job_id();
  f.table.SetState(job, RUNNING, "placed");
  f.clock.AdvanceMillis(1500);
  f.table.SetState(job, SUCCEEDED, "done");
  // The listeners see the record as it is now: state, reason and end time.
  REQUIRE(job.info.end_unix_ms() == f.clock.UnixMillis());
  REQUIRE(f.table.Remove(job, "deleted by a test").ok());
  REQUIRE(heard == std::vector<std::string>{
                       "first added " + id, "second added " + id,
                       "first PENDING->RUNNING placed", "second PENDING->RUNNING placed",
                       "first RUNNING->SUCCEEDED done", "second RUNNING->SUCCEEDED done",
                       "first removed " + id, "second removed " + id});
  REQUIRE(f.table.Find(id) == nullptr);
  REQUIRE(f.table.order().empty());
  // Each change reached the journal: a replay knows the job was deleted.
  REQUIRE(LatestJobs(f.store.entries()).count(id) == 0);
}

TEST_CASE("a removal the journal refuses leaves the job in the table and tells no listener", "[jobs][table][journal]") {
  JobTableFixture f;
  std::vector<std::string> heard;
  Recorder listener("l", &heard);
  f.table.Subscribe(&listener);
  TrackedJob& job = f.Add(SUCCEEDED);
  const std::string id = job.info.job_id();
  heard.clear();
  f.store.set_fail_appends(true);
  Status removed = f.table.Remove(job, "deleted by a test");
  REQUIRE(removed.code() == Status::Code::kUnavailable);
  REQUIRE(heard.empty());
  REQUIRE(f.table.Find(id) != nullptr);
  REQUIRE(f.table.order().size() == 1);
}

TEST_CASE("the job table keeps the unfinished and the timed jobs in step with their states", "[jobs][table]") {
  JobTableFixture f;
  TrackedJob& waiting = f.Add();
  TrackedJob& running = f.Add();
  f.table.SetState(running, RUNNING, "placed");
  REQUIRE(f.table.unfinished().size() == 2);
  // Only those with a live attempt or a retry's delay are timed: a queue
  // of waiting jobs costs a tick nothing.
  REQUIRE(f.table.TimedNow() == std::vector<TrackedJob*>{&running});
  f.table.SetState(running, RESTARTING, "attempt 0 failed");
  REQUIRE(f.table.TimedNow() == std::vector<TrackedJob*>{&running});
  f.table.SetState(running, FAILED, "attempt 1 failed");
  f.table.SetState(waiting, STOPPED, "stopped before it ran");
  REQUIRE(f.table.unfinished().empty());
  REQUIRE(f.table.TimedNow().empty());
  // A job's number is its place in submission order, whatever follows it.
  REQUIRE(JobTable::JobNumber(waiting.info.job_id()) == 1);
  REQUIRE(JobTable::JobNumber("job-0042-abc") == 42);
  REQUIRE(JobTable::JobNumber("job-0042-") == -1);
  REQUIRE(JobTable::JobNumber("sweep-0001") == -1);
}
