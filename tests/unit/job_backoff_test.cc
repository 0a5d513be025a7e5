// Restart delays on a fake clock: a failed attempt waits in RESTARTING for
// its job's restart_delay, growing exponentially while attempts keep
// failing, and the head's Tick wakes it on time.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include "daemon/head/job_retry.h"
#include "head_harness.h"
#include "job_table_fixture.h"

using namespace clusterd;
using namespace clusterd::testing;

namespace {

// Lets the current attempt of a 1-rank job on node a fail at once.
void FailNow(Harness& h, const std::string& id) {
  JobInfo job = h.Job(id);
  REQUIRE(job.state() == RUNNING);
  int attempt = job.attempts(job.attempts_size() - 1).attempt();
  h.AnswerPort("a", 1000);
  h.Exit("a", id, attempt, 0, 1);
}

int Attempts(Harness& h, const std::string& id) {
  JobInfo job = h.Job(id);
  return job.older_attempts().count() + job.attempts_size();
}

// Waits `ms` less 500, sees no new attempt, then 500 more and sees one.
void RequireRetryAfter(Harness& h, const std::string& id, int64_t ms) {
  int before = Attempts(h, id);
  REQUIRE(h.Job(id).state() == RESTARTING);
  h.Advance(ms - 500);
  REQUIRE(Attempts(h, id) == before);
  REQUIRE(h.Job(id).state() == RESTARTING);
  h.Advance(500);
  REQUIRE(Attempts(h, id) == before + 1);
  REQUIRE(h.Job(id).state() == RUNNING);
}

SubmitJobRequest WithDelay(Harness& h, int max_failures, double initial_s, double max_s, double factor) {
  SubmitJobRequest request = h.Request(1, 1, PACK, max_failures);
  request.mutable_spec()->mutable_restart_delay()->set_initial_s(initial_s);
  request.mutable_spec()->mutable_restart_delay()->set_max_s(max_s);
  request.mutable_spec()->mutable_restart_delay()->set_factor(factor);
  return request;
}

}  // namespace

TEST_CASE("by default a retry waits 1s, doubling while attempts keep failing", "[jobs][backoff]") {
  Harness h;
  h.AddNode("a", 1);
  std::string id = h.Submit(1, 1, PACK, /*max_failures=*/6);
  int64_t delay_ms = 1000;
  for (int attempt = 0; attempt < 6; ++attempt, delay_ms *= 2) {
    FailNow(h, id);
    JobInfo job = h.Job(id);
    INFO("attempt " << attempt);
    REQUIRE(job.reason().rfind(fmt::format("retrying in {}s after attempt {} failed: rank 0 exited with code 1",
                                           delay_ms / 1000, attempt), 0) == 0);
    REQUIRE(job.restart_delay_ms() == delay_ms);
    REQUIRE(job.retry_at_unix_ms() == h.clock.UnixMillis() + delay_ms);
    // The daemon's timer is armed for the moment the retry is due.
    REQUIRE(h.head->jobs().Tick() == h.clock.NowMicros() + delay_ms * 1000);
    RequireRetryAfter(h, id, delay_ms);
    REQUIRE(h.Job(id).retry_at_unix_ms() == 0);
  }
  FailNow(h, id);
  REQUIRE(h.Job(id).state() == FAILED);  // max_failures spent: no wait
  REQUIRE(h.Job(id).reason().rfind("rank 0 exited with code 1 on node a (attempt 6)", 0) == 0);
}

TEST_CASE("the restart delay stops growing at max, and a job file's policy is followed", "[jobs][backoff]") {
  Harness h;
  h.AddNode("a", 1);
  std::string id = *h.head->jobs().Submit(WithDelay(h, 10, 10, 25, 3));
  FailNow(h, id);
  REQUIRE_THAT(h.Job(id).reason(), Catch::StartsWith("retrying in 10s after attempt 0 failed: "));
  RequireRetryAfter(h, id, 10'000);
  FailNow(h, id);
  REQUIRE_THAT(h.Job(id).reason(), Catch::StartsWith("retrying in 25s after attempt 1 failed: "));  // 30s capped
  RequireRetryAfter(h, id, 25'000);
  FailNow(h, id);
  RequireRetryAfter(h, id, 25'000);
}

TEST_CASE("an attempt that ran 10 minutes starts the restart delays over", "[jobs][backoff]") {
  Harness h;
  h.AddNode("a", 1);
  std::string id = h.Submit(1, 1, PACK, 10);
  for (int64_t delay_ms : {1000, 2000, 4000}) {
    FailNow(h, id);
    RequireRetryAfter(h, id, delay_ms);
  }
  h.AnswerPort("a", 1000);
  h.Advance(10 * 60 * 1000);  // a long, healthy run, then a failure
  h.Exit("a", id, 3, 0, 1);
  REQUIRE_THAT(h.Job(id).reason(), Catch::StartsWith("retrying in 1s after attempt 3 failed: "));
  RequireRetryAfter(h, id, 1000);
  FailNow(h, id);
  RequireRetryAfter(h, id, 2000);
}

TEST_CASE("restart_delay with initial 0 retries at once", "[jobs][backoff]") {
  Harness h;
  h.AddNode("a", 1);
  std::string id = *h.head->jobs().Submit(WithDelay(h, 3, 0, 300, 2));
  for (int attempt = 0; attempt < 3; ++attempt) {
    FailNow(h, id);
    REQUIRE(h.Job(id).state() == RUNNING);
    REQUIRE(Attempts(h, id) == attempt + 2);
  }
}

TEST_CASE("a retry waiting out its delay keeps waiting across a head restart, and can be stopped", "[jobs][backoff][journal]") {
  Harness h;
  h.AddNode("a", 1);
  std::string id = *h.head->jobs().Submit(WithDelay(h, 5, 60, 300, 2));
  FailNow(h, id);
  h.Advance(20'000);
  REQUIRE(h.Job(id).state() == RESTARTING);

  // A new head, 20 s into the 60 s wait, waits the other 40 s.
  FakeClock clock2(h.clock.NowMicros());
  LogStore logs("");
  HeadCore head2(&clock2, h.config, &h.store, &logs);
  REQUIRE(head2.Restore().ok());
  auto conn = std::make_shared<FakeAgentConnection>();
  AgentMessage m;
  m.mutable_register_()->set_name("a");
  m.mutable_register_()->set_address("10.0.0.1");
  (*m.mutable_register_()->mutable_total()->mutable_amounts())[kCpu] = 1;
  head2.OnAgentMessage(conn, m);
  REQUIRE(head2.jobs().Tick() == clock2.NowMicros() + 40'000'000);
  AgentMessage beat;
  beat.mutable_heartbeat()->set_seq(1);
  for (int i = 0; i < 79; ++i) {
    clock2.AdvanceMillis(500);
    head2.OnAgentMessage(conn, beat);
    head2.Tick();
  }
  REQUIRE(head2.jobs().Get(id)->state() == RESTARTING);
  clock2.AdvanceMillis(500);
  head2.OnAgentMessage(conn, beat);
  head2.Tick();
  REQUIRE(head2.jobs().Get(id)->state() == RUNNING);
  REQUIRE(head2.jobs().Get(id)->attempts_size() == 2);

  // On the first head, still waiting: stop it there, and it never runs again.
  auto stopped = h.head->jobs().Stop(id);
  REQUIRE(stopped.ok());
  REQUIRE(stopped->state() == STOPPED);
  REQUIRE(stopped->reason() == "stopped by clusterctl stop before attempt 1 started");
  h.Advance(60'000);
  REQUIRE(h.Job(id).state() == STOPPED);
  REQUIRE(h.Job(id).attempts_size() == 1);
}

TEST_CASE("a retry after a machine died goes at once, and the backoff keeps its place", "[jobs][backoff]") {
  Harness h;
  h.AddNode("a", 1);
  h.AddNode("b", 1);
  std::string id = h.Submit(2, 1, SPREAD, /*max_failures=*/3);
  h.AnswerPort("a", 1000);
  h.AnswerPort("b", 1000);
  // A crash of the job's own: the usual 1 s wait.
  int attempt = h.Job(id).attempts(0).attempt();
  h.Exit("a", id, attempt, 0, 1);
  REQUIRE(h.GotKill("b", attempt));
  h.Exit("b", id, attempt, 1, 0, 15);
  REQUIRE(h.Job(id).restart_delay_ms() == 1000);
  RequireRetryAfter(h, id, 1000);
  // Now a machine dies: no crash loop, so no wait (the failover users time).
  h.AnswerPort("a", 1001);
  h.AnswerPort("b", 1001);
  h.head->OnAgentDisconnected(h.agents["b"].get(), "connection lost");
  h.AddNode("b", 1);
  const int before = Attempts(h, id);
  REQUIRE(h.GotKill("a", 1));
  h.Exit("a", id, 1, 0, 0, 15);
  REQUIRE(Attempts(h, id) == before + 1);
  REQUIRE(h.Job(id).state() == RUNNING);
  REQUIRE(h.Job(id).restart_delay_ms() == 1000);  // where the crashes left it
}

// Ranks slow to end after a failure (a SIGTERM handler saving a
// checkpoint) leave the attempt ending for seconds; a `clusterctl stop`
// meanwhile must stop the job, not be dropped while the job goes on to its
// next attempts and ends FAILED.
TEST_CASE("a stop while a failed attempt's ranks are still ending stops the job instead of retrying it",
          "[jobs][backoff]") {
  Harness h;
  h.AddNode("a", 2);
  std::string id = h.Submit(2, 1, PACK, /*max_failures=*/5);
  REQUIRE(h.Job(id).state() == RUNNING);
  h.AnswerPort("a", 1000);
  h.Exit("a", id, 0, 1, 1);  // rank 1 fails; rank 0 is told to stop and takes its time
  REQUIRE(h.Job(id).state() == RUNNING);
  auto stopped = h.head->jobs().Stop(id, "stopped by clusterctl stop");
  REQUIRE(stopped.ok());
  h.Exit("a", id, 0, 0, 143);
  JobInfo job = h.Job(id);
  REQUIRE(job.state() == STOPPED);
  REQUIRE(Attempts(h, id) == 1);
  REQUIRE_THAT(job.reason(), Catch::StartsWith("stopped by clusterctl stop while attempt 0 was ending: rank 1 exited "
                                                "with code 1 on node a (attempt 0)"));
  h.Advance(10'000);
  REQUIRE(h.Job(id).state() == STOPPED);
  REQUIRE(Attempts(h, id) == 1);
}

// An adopted attempt's timeout counts from its start, not from the head's
// restart, or the job would run that much longer.
TEST_CASE("an attempt's timeout counts from its start across a head restart", "[jobs][journal]") {
  Harness h;
  h.AddNode("a", 1);
  SubmitJobRequest request = h.Request(1, 1, PACK);
  request.mutable_spec()->set_timeout_s(10);
  std::string id = *h.head->jobs().Submit(request);
  h.AnswerPort("a", 1000);
  REQUIRE(h.Job(id).state() == RUNNING);
  h.Advance(6'000);

  // A new head, 6 s into the attempt, adopts its rank: 4 s are left, not 10.
  FakeClock clock2(h.clock.NowMicros());
  LogStore logs("");
  HeadCore head2(&clock2, h.config, &h.store, &logs);
  REQUIRE(head2.Restore().ok());
  auto conn = std::make_shared<FakeAgentConnection>();
  head2.OnAgentMessage(conn, RegisterAgain("a", 1, id, {0}));
  REQUIRE(head2.jobs().Get(id)->state() == RUNNING);
  auto advance = [&](int64_t ms) {  // the node beating every 100 ms
    AgentMessage beat;
    beat.mutable_heartbeat()->set_seq(1);
    for (int64_t done = 0; done < ms; done += 100) {
      clock2.Advance(100'000);
      head2.OnAgentMessage(conn, beat);
      head2.Tick();
    }
  };
  advance(3'900);
  REQUIRE(head2.jobs().Get(id)->state() == RUNNING);
  advance(200);
  // Ending: its rank is told to stop; once it has, the job failed for good.
  AgentMessage exited;
  auto* e = exited.mutable_rank_exited();
  e->set_job_id(id);
  e->set_attempt(0);
  e->set_rank(0);
  e->set_signal(15);
  head2.OnAgentMessage(conn, exited);
  JobInfo job = *head2.jobs().Get(id);
  REQUIRE(job.state() == FAILED);
  REQUIRE(job.reason().rfind("timed out after 10 s", 0) == 0);
}

// JobRetry on its own over a job table: the delay it sets, and its wait
// run by DueNow on a fake clock.
TEST_CASE("a retry waits its delay in RESTARTING, doubling while attempts fail, and is queued first once due",
          "[jobs][backoff]") {
  JobTableFixture f;
  JobRetry retry(&f.clock, &f.table);
  TrackedJob& job = f.Add(RUNNING);
  TrackedJob& newer = f.Add();
  f.table.queue().push_back(newer.info.job_id());
  auto fail_attempt = [&](int attempt) {
    AttemptInfo* ended = job.info.add_attempts();
    ended->set_attempt(attempt);
    ended->set_start_unix_ms(f.clock.UnixMillis() - 100);
    ended->set_end_unix_ms(f.clock.UnixMillis());
    retry.Retry(job, attempt, "boom");
  };
  fail_attempt(0);
  REQUIRE(job.info.state() == RESTARTING);
  REQUIRE(job.info.restart_delay_ms() == 1000);
  REQUIRE(job.info.reason() == "retrying in 1s after attempt 0 failed: boom");
  NextWake wake;
  f.clock.AdvanceMillis(999);
  REQUIRE_FALSE(retry.DueNow(job, f.clock.NowMicros(), &wake));
  REQUIRE(wake.at == f.clock.NowMicros() + 1000);
  f.clock.AdvanceMillis(1);
  REQUIRE(retry.DueNow(job, f.clock.NowMicros(), &wake));
  REQUIRE(f.table.queue().front() == job.info.job_id());  // before the newer job
  REQUIRE(job.info.retry_at_unix_ms() == 0);

  f.table.SetState(job, RUNNING, "attempt 1 placed");
  fail_attempt(1);
  REQUIRE(job.info.restart_delay_ms() == 2000);
  f.clock.AdvanceMillis(2000);
  REQUIRE(retry.DueNow(job, f.clock.NowMicros(), &wake));
  // A machine that died is no crash loop: queued at once, the delay kept.
  f.table.SetState(job, RUNNING, "attempt 2 placed");
  job.run.node_lost = true;
  fail_attempt(2);
  REQUIRE(job.info.state() == RESTARTING);
  REQUIRE(job.retry_at == 0);
  REQUIRE(job.info.restart_delay_ms() == 2000);
  REQUIRE(f.table.queue().front() == job.info.job_id());
}
