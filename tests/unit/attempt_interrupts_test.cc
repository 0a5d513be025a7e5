// AttemptInterrupts on its own over a job table and the concerns it talks
// to: what ends an attempt from outside its ranks. A node's death ends the
// attempts with a rank there (retried at once, or FAILED), a timeout ends
// an attempt at its deadline on the fake clock and not before, and a stop
// stops a job in whatever state it is, or is refused whole when the
// journal cannot hold it.
#include <catch2/catch.hpp>

#include <string>

#include "daemon/head/attempt_interrupts.h"
#include "daemon/head/job_adoption.h"
#include "daemon/head/job_attempts.h"
#include "daemon/head/job_replay.h"
#include "job_table_fixture.h"

using namespace clusterd;
using namespace clusterd::testing;

namespace {

struct InterruptsFixture : JobConcernsFixture {
  int schedules = 0;  // how often the queue was to be looked at again
  JobAdoption adoption{&clock, config, AdoptionParts(), Send(), [] {}};
  JobAttempts attempts{&clock, config, AttemptParts(&adoption), [this] { ++schedules; }};
  AttemptInterrupts interrupts{&table, &attempts, &retention, [this] { ++schedules; }};

  // A job of `workers` ranks running attempt 0 on `plan`, launched.
  TrackedJob& Running(int workers, const std::vector<std::pair<std::string, int>>& plan, int max_failures = 0) {
    TrackedJob& job = Add(PENDING, "", workers);
    job.info.mutable_spec()->set_max_failures(max_failures);
    REQUIRE(attempts.Start(job, plan).empty());
    if (plan.size() > 1) {
      PortReserved port;
      port.set_job_id(job.info.job_id());
      port.set_attempt(0);
      port.set_port(29500);
      attempts.OnPortReserved(plan.front().first, port);
    }
    REQUIRE(job.info.state() == RUNNING);
    return job;
  }
};

}  // namespace

TEST_CASE("a node's death ends each attempt with a rank there: retried at once while failures are left, else FAILED",
          "[jobs][interrupts]") {
  InterruptsFixture f;
  const std::string a = f.AddNode("a", 2), b = f.AddNode("b", 2, 2);
  TrackedJob& gang = f.Running(2, {{a, 1}, {b, 1}}, /*max_failures=*/1);
  TrackedJob& lone = f.Running(1, {{b, 1}});
  TrackedJob& elsewhere = f.Running(1, {{a, 1}});
  const std::string gang_id = gang.info.job_id();

  f.nodes.MarkDisconnected(b, f.nodes.Find(b)->incarnation(), "connection lost");
  f.interrupts.OnNodeDead(*f.nodes.Find(b));
  // Its only rank was there: nothing is left to wait for.
  REQUIRE(lone.info.state() == FAILED);
  REQUIRE_THAT(lone.info.reason(), Catch::StartsWith("node b died (connection lost) with rank 0 of attempt 0"));
  // Rank 0 on a is told to stop; the gang retries once it is down.
  REQUIRE(gang.info.state() == RUNNING);
  REQUIRE(f.Kills(a, gang_id) == 1);
  REQUIRE(elsewhere.info.state() == RUNNING);
  REQUIRE(f.Kills(a, elsewhere.info.job_id()) == 0);

  f.attempts.OnRankExited(a, InterruptsFixture::Exit(gang_id, 0, 0, 0, 15));
  REQUIRE(gang.info.state() == RESTARTING);
  REQUIRE_THAT(gang.info.reason(),
               Catch::StartsWith("attempt 0 failed: node b died (connection lost) with rank 1 of attempt 0"));
  // A lost machine is no crash loop: no restart delay, first in the queue.
  REQUIRE(gang.retry_at == 0);
  REQUIRE(f.table.queue().front() == gang_id);
  REQUIRE(f.FreeCpus(a) == 1);  // elsewhere's share only
}

TEST_CASE("a timeout ends the attempt at its deadline on the clock, not before, and the job is not retried",
          "[jobs][interrupts]") {
  InterruptsFixture f;
  const std::string a = f.AddNode("a", 1);
  TrackedJob& job = f.Add();
  const std::string id = job.info.job_id();
  job.info.mutable_spec()->set_timeout_s(10);
  job.info.mutable_spec()->set_max_failures(3);
  REQUIRE(f.attempts.Start(job, {{a, 1}}).empty());
  const Micros started = f.clock.NowMicros();

  f.clock.AdvanceMillis(9'999);
  NextWake wake;
  f.interrupts.CheckDeadlines(job, f.clock.NowMicros(), &wake);
  REQUIRE(f.Kills(a, id) == 0);
  REQUIRE(wake.at == started + 10'000'000);  // the head's timer is armed for the deadline

  f.clock.AdvanceMillis(1);
  NextWake after;
  f.interrupts.CheckDeadlines(job, f.clock.NowMicros(), &after);
  REQUIRE(f.Kills(a, id) == 1);
  REQUIRE(after.at == 0);
  REQUIRE(job.info.state() == RUNNING);  // until its rank is down
  f.attempts.OnRankExited(a, InterruptsFixture::Exit(id, 0, 0, 0, 15));
  REQUIRE(job.info.state() == FAILED);
  REQUIRE_THAT(job.info.reason(), Catch::StartsWith("timed out after 10 s"));
  REQUIRE(AttemptCount(job.info) == 1);
}

TEST_CASE("a stop stops a job in any state: before it ran, while it runs, and while it waits to be retried",
          "[jobs][interrupts]") {
  InterruptsFixture f;
  const std::string a = f.AddNode("a", 1);

  SECTION("waiting in the queue") {
    TrackedJob& job = f.Add();
    auto stopped = f.interrupts.Stop(job.info.job_id(), "stopped by a test");
    REQUIRE(stopped.ok());
    REQUIRE(stopped->state() == STOPPED);
    REQUIRE(stopped->reason() == "stopped by a test before it ran");
    REQUIRE(LatestJobs(f.store.entries()).at(job.info.job_id()).state() == STOPPED);
    REQUIRE(f.schedules == 1);  // a job first in the queue held back those behind it
  }
  SECTION("running: its ranks are killed and it is STOPPED once they are down") {
    TrackedJob& job = f.Running(1, {{a, 1}}, 3);
    const std::string id = job.info.job_id();
    auto stopping = f.interrupts.Stop(id, "stopped by a test");
    REQUIRE(stopping.ok());
    REQUIRE(stopping->state() == RUNNING);
    REQUIRE(f.Kills(a, id) == 1);
    f.attempts.OnRankExited(a, InterruptsFixture::Exit(id, 0, 0, 0, 15));
    REQUIRE(job.info.state() == STOPPED);
    REQUIRE(job.info.reason() == "stopped by a test");
    // A stop of a job that ended changes nothing.
    auto again = f.interrupts.Stop(id, "stopped again");
    REQUIRE(again.ok());
    REQUIRE(again->reason() == "stopped by a test");
  }
  SECTION("RESTARTING, waiting out its restart delay: STOPPED, and the delay's end starts nothing") {
    TrackedJob& job = f.Running(1, {{a, 1}}, 3);
    const std::string id = job.info.job_id();
    f.attempts.OnRankExited(a, InterruptsFixture::Exit(id, 0, 0, 1));
    REQUIRE(job.info.state() == RESTARTING);
    REQUIRE(job.retry_at > 0);
    auto stopped = f.interrupts.Stop(id, "stopped by a test");
    REQUIRE(stopped.ok());
    REQUIRE(stopped->state() == STOPPED);
    REQUIRE(stopped->reason() == "stopped by a test before attempt 1 started");
    REQUIRE(stopped->retry_at_unix_ms() == 0);
    f.clock.AdvanceMillis(60'000);
    NextWake wake;
    REQUIRE_FALSE(f.retry.DueNow(job, f.clock.NowMicros(), &wake));
    REQUIRE(f.table.queue().empty());
  }
  SECTION("while a failed attempt's ranks are still ending: STOPPED, not retried") {
    const std::string b = f.AddNode("b", 2, 2);
    TrackedJob& job = f.Running(2, {{b, 2}}, 5);
    const std::string id = job.info.job_id();
    f.attempts.OnRankExited(b, InterruptsFixture::Exit(id, 0, 1, 1));  // rank 0 is told to stop, and takes its time
    REQUIRE(f.interrupts.Stop(id, "stopped by a test").ok());
    f.attempts.OnRankExited(b, InterruptsFixture::Exit(id, 0, 0, 0, 15));
    REQUIRE(job.info.state() == STOPPED);
    REQUIRE_THAT(job.info.reason(), Catch::StartsWith("stopped by a test while attempt 0 was ending: rank 1 exited "
                                                      "with code 1 on node b (attempt 0)"));
    REQUIRE(AttemptCount(job.info) == 1);
  }
}

TEST_CASE("a stop the journal cannot hold is refused and changes nothing, and an unknown job is named",
          "[jobs][interrupts][journal]") {
  InterruptsFixture f;
  const std::string a = f.AddNode("a", 1);
  TrackedJob& job = f.Running(1, {{a, 1}});
  const std::string id = job.info.job_id();
  f.store.set_fail_appends(true);
  // A change the journal cannot write: it is out of step until a snapshot heals it.
  CurrentAttempt(job.info).set_master_port(29501);
  f.table.Persist(job);
  auto refused = f.interrupts.Stop(id, "stopped by a test");
  REQUIRE(refused.status().code() == Status::Code::kUnavailable);
  REQUIRE_THAT(refused.status().message(), Catch::EndsWith("the job was not stopped"));
  REQUIRE(job.info.state() == RUNNING);
  REQUIRE(job.run.ending == AttemptEnding::kNone);
  REQUIRE(f.Kills(a, id) == 0);

  auto unknown = f.interrupts.Stop("job-0099", "stopped by a test");
  REQUIRE(unknown.status().code() == Status::Code::kNotFound);
  REQUIRE_THAT(unknown.status().message(), Catch::Contains("job-0099"));
}
