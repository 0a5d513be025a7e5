// Hung gangs (docs/RELIABILITY.md "Hung gangs"), each part on a fake
// clock: a node's RankActivityWatch says when a rank goes idle (CPU use
// keeps it active), GangActivity decides when the gang is hung (one active
// rank keeps it alive), and HangWatch ends a hung attempt after its nodes'
// diagnosis, or at the diagnosis's bound without it; the job file's
// hang_timeout_s is parsed and checked.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "daemon/agent/rank_activity_watch.h"
#include "daemon/head/gang_activity.h"
#include "daemon/head/hang_watch.h"
#include "daemon/head/job_adoption.h"
#include "daemon/head/job_attempts.h"
#include "job_spec_test_util.h"
#include "job_table_fixture.h"

using namespace clusterd;
using namespace clusterd::testing;

namespace {

constexpr Micros kSecond = 1'000'000;

WatchRanks Watching(const std::string& job_id, int attempt, int64_t idle_after_ms) {
  WatchRanks watch;
  watch.set_job_id(job_id);
  watch.set_attempt(attempt);
  watch.set_idle_after_ms(idle_after_ms);
  return watch;
}

// What a RankActivityWatch tells, as sent.
struct Told {
  std::vector<RankActivity> messages;
  bool take = true;  // whether the head's stream takes them
  std::function<bool(const AgentMessage&)> Send() {
    return [this](const AgentMessage& m) {
      if (take) messages.push_back(m.rank_activity());
      return take;
    };
  }
};

}  // namespace

TEST_CASE("a node tells when a rank goes idle, not while CPU, output or reports keep it active",
          "[hang][agent]") {
  FakeClock clock;
  RankActivityWatch watch;
  Told told;
  watch.Watch(Watching("job-1", 0, 1000), clock.NowMicros());
  watch.Started("job-1", 0, 0, 100, clock.NowMicros());
  watch.Started("job-9", 0, 0, 900, clock.NowMicros());  // not watched: its job has no hang timeout
  REQUIRE(watch.Pids() == std::vector<pid_t>{100});

  // Its CPU time grows at every reading: it computes, whatever it prints.
  for (int64_t ticks = 10; ticks < 60; ticks += 10) {
    clock.AdvanceMillis(400);
    watch.TakeCpu({{100, ticks}}, clock.NowMicros());
    watch.Report(clock.NowMicros(), told.Send());
  }
  REQUIRE(told.messages.empty());

  // Its CPU time stands still: idle once a second has passed since it last moved.
  const Micros last_moved = clock.NowMicros();
  clock.AdvanceMillis(900);
  watch.TakeCpu({{100, 50}}, clock.NowMicros());
  watch.Report(clock.NowMicros(), told.Send());
  REQUIRE(told.messages.empty());
  clock.AdvanceMillis(200);
  watch.TakeCpu({{100, 50}}, clock.NowMicros());
  watch.Report(clock.NowMicros(), told.Send());
  REQUIRE(told.messages.size() == 1);
  CHECK(told.messages[0].job_id() == "job-1");
  CHECK(told.messages[0].rank() == 0);
  CHECK(told.messages[0].idle());
  CHECK(told.messages[0].idle_for_ms() == (clock.NowMicros() - last_moved) / 1000);
  // Told once: staying idle costs nothing more.
  clock.AdvanceMillis(5000);
  watch.Report(clock.NowMicros(), told.Send());
  REQUIRE(told.messages.size() == 1);

  // A line printed makes it active again, told at once; a message the
  // stream did not take is offered again.
  told.take = false;
  watch.Touched("job-1", 0, 0, clock.NowMicros());
  watch.Report(clock.NowMicros(), told.Send());
  told.take = true;
  watch.Report(clock.NowMicros(), told.Send());
  REQUIRE(told.messages.size() == 2);
  CHECK_FALSE(told.messages[1].idle());

  // Idle again, and a head that came back hears it again.
  clock.AdvanceMillis(1000);
  watch.Report(clock.NowMicros(), told.Send());
  REQUIRE(told.messages.size() == 3);
  watch.RetellIdle();
  watch.Report(clock.NowMicros(), told.Send());
  REQUIRE(told.messages.size() == 4);
  CHECK(told.messages[3].idle());

  // Killed: nothing more is watched or told.
  watch.EndAttempt("job-1", 0);
  CHECK(watch.empty());
}

TEST_CASE("a gang is hung only once every running rank was idle for the timeout", "[hang]") {
  GangActivity gang;
  const Micros timeout = 3 * kSecond;
  CHECK_FALSE(gang.HungAt(2, {}, timeout));  // nobody told idle: active
  gang.OnIdle(0, 10 * kSecond);
  CHECK_FALSE(gang.HungAt(2, {}, timeout));  // rank 1 still active keeps it alive
  gang.OnIdle(1, 12 * kSecond);
  REQUIRE(gang.HungAt(2, {}, timeout) == 15 * kSecond);  // from the last activity of any rank
  gang.OnActive(0);
  CHECK_FALSE(gang.HungAt(2, {}, timeout));
  // A rank that exited keeps nobody alive.
  CHECK(gang.HungAt(2, {0}, timeout) == 15 * kSecond);
  CHECK_FALSE(gang.HungAt(2, {0, 1}, timeout));
  CHECK(IdleAfterMs(3) == 1500);
  CHECK(IdleAfterMs(0) == 0);
  CHECK(IdleAfterMs(1e300) == static_cast<int64_t>(kMaxHangTimeoutS * 500));
}

namespace {

struct HangFixture : JobConcernsFixture {
  JobAdoption adoption{&clock, config, AdoptionParts(), Send(), [] {}};
  JobAttempts attempts{&clock, config, AttemptParts(&adoption), [] {}};
  HangWatch watch{&clock, config, &table, &nodes, &attempts, Send()};
  std::string a, b;

  HangFixture() {
    a = AddNode("a", 1);
    b = AddNode("b", 1, 2);
  }

  // A 2-rank job with hang_timeout_s 3, rank 0 on a and rank 1 on b.
  TrackedJob& Running() {
    TrackedJob& job = Add(PENDING, "", 2);
    job.info.mutable_spec()->set_max_failures(1);
    job.info.mutable_spec()->set_hang_timeout_s(3);
    REQUIRE(attempts.Start(job, {{a, 1}, {b, 1}}).empty());
    PortReserved port;
    port.set_job_id(job.info.job_id());
    port.set_port(29500);
    attempts.OnPortReserved(a, port);
    for (auto [node, rank] : {std::pair{a, 0}, std::pair{b, 1}}) {
      RankStarted started;
      started.set_job_id(job.info.job_id());
      started.set_rank(rank);
      started.set_pid(100 + rank);
      attempts.OnRankStarted(node, started);
    }
    REQUIRE(job.info.state() == RUNNING);
    return job;
  }
  void Tell(const std::string& node, const std::string& job_id, int rank, bool idle, int64_t idle_for_ms) {
    RankActivity activity;
    activity.set_job_id(job_id);
    activity.set_rank(rank);
    activity.set_idle(idle);
    activity.set_idle_for_ms(idle_for_ms);
    watch.OnRankActivity(node, activity);
  }
  Micros Tick() {
    NextWake wake;
    watch.Tick(clock.NowMicros(), &wake);
    return wake.at;
  }
  int Diagnoses(const std::string& node) const {
    auto it = sent.find(node);
    int n = 0;
    if (it != sent.end()) {
      for (const HeadMessage& m : it->second) n += m.has_diagnose_ranks() ? 1 : 0;
    }
    return n;
  }
  RanksDiagnosed Answer(const std::string& job_id, int rank, const std::string& wait, const std::string& tail) {
    RanksDiagnosed answer;
    answer.set_job_id(job_id);
    RankDiagnosis* d = answer.add_ranks();
    d->set_rank(rank);
    d->set_pid(100 + rank);
    d->set_wait_channel(wait);
    d->set_kernel_stack("[<0>] futex_wait_queue+0x5e/0x90");
    d->set_python_processes(1);
    d->set_log_tail(tail);
    return answer;
  }
};

}  // namespace

TEST_CASE("the launch asks the attempt's nodes to watch its ranks when the job has a hang timeout", "[hang]") {
  HangFixture f;
  TrackedJob& job = f.Running();
  for (const std::string& node : {f.a, f.b}) {
    bool asked = false;
    for (const HeadMessage& m : f.sent[node]) {
      if (!m.has_watch_ranks()) continue;
      asked = true;
      CHECK(m.watch_ranks().job_id() == job.info.job_id());
      CHECK(m.watch_ranks().idle_after_ms() == 1500);
    }
    CHECK(asked);
  }
}

TEST_CASE("a hung gang is diagnosed at hang_timeout_s after its last activity, then failed and retried", "[hang]") {
  HangFixture f;
  TrackedJob& job = f.Running();
  const std::string id = job.info.job_id();

  // Both idle, rank 1 since later: hung 3 s after rank 1's last activity.
  f.clock.Advance(10 * kSecond);
  f.Tell(f.a, id, 0, true, 2000);
  f.Tell(f.b, id, 1, true, 1500);
  const Micros hung_at = f.clock.NowMicros() - 1500 * 1000 + 3 * kSecond;
  REQUIRE(f.Tick() == hung_at);
  f.clock.Advance(hung_at - f.clock.NowMicros() - 1);
  f.Tick();
  REQUIRE(f.Diagnoses(f.a) + f.Diagnoses(f.b) == 0);
  REQUIRE(job.run.ending == AttemptEnding::kNone);

  f.clock.Advance(1);
  f.Tick();
  REQUIRE(f.Diagnoses(f.a) == 1);
  REQUIRE(f.Diagnoses(f.b) == 1);
  REQUIRE(f.sent[f.a].back().diagnose_ranks().wait_ms() == f.config.hang_diagnosis_wait_ms);
  REQUIRE(job.run.ending == AttemptEnding::kFail);
  REQUIRE(f.Kills(f.a, id) == 0);  // not before the diagnosis: the ranks print their stacks first

  f.watch.OnRanksDiagnosed(f.a, f.Answer(id, 0, "futex_wait_queue (python3)", "step 7\nThread 0x1 (most recent call first):\n  File \"train.py\", line 9 in allreduce\n"));
  REQUIRE(f.Kills(f.a, id) == 0);  // b has not answered
  f.watch.OnRanksDiagnosed(f.b, f.Answer(id, 1, "hrtimer_nanosleep (python3)", "step 7\n"));
  REQUIRE(f.Kills(f.a, id) == 1);
  REQUIRE(f.Kills(f.b, id) == 1);
  const AttemptInfo& attempt = CurrentAttempt(job.info);
  CHECK_THAT(attempt.failure_reason(),
             Catch::StartsWith("attempt 0 hung: no rank printed, reported or used CPU for 3 s (hang_timeout_s 3); "
                               "rank 0 waits in futex_wait_queue (python3), rank 1 waits in hrtimer_nanosleep (python3)"));
  CHECK_THAT(attempt.hang_diagnosis(), Catch::Contains("rank 0 on a, pid 100: waits in futex_wait_queue (python3)"));
  CHECK_THAT(attempt.hang_diagnosis(), Catch::Contains("line 9 in allreduce"));
  CHECK_THAT(attempt.hang_diagnosis(), Catch::Contains("futex_wait_queue+0x5e"));
  CHECK(f.watch.watched() == 0);

  // A failure like any other: retried, counted against max_failures.
  f.attempts.OnRankExited(f.a, JobConcernsFixture::Exit(id, 0, 0, 0, 15));
  f.attempts.OnRankExited(f.b, JobConcernsFixture::Exit(id, 0, 1, 0, 15));
  REQUIRE(job.info.state() == RESTARTING);
  CHECK_THAT(job.info.reason(), Catch::Contains("attempt 0 failed: attempt 0 hung"));
}

TEST_CASE("one rank still active keeps a gang alive, however long the others wait", "[hang]") {
  HangFixture f;
  TrackedJob& job = f.Running();
  const std::string id = job.info.job_id();
  f.Tell(f.a, id, 0, true, 1500);
  for (int i = 0; i < 100; ++i) {
    f.clock.Advance(kSecond);
    CHECK(f.Tick() == 0);
  }
  // Rank 1 goes idle, then is active again before the timeout.
  f.Tell(f.b, id, 1, true, 1500);
  f.clock.Advance(kSecond);
  f.Tell(f.b, id, 1, false, 0);
  f.clock.Advance(10 * kSecond);
  f.Tick();
  CHECK(f.Diagnoses(f.a) + f.Diagnoses(f.b) == 0);
  CHECK(job.run.ending == AttemptEnding::kNone);
  // Words from a node that does not run the rank count for nothing.
  f.Tell(f.a, id, 1, true, 100000);
  f.Tick();
  CHECK(job.run.ending == AttemptEnding::kNone);
}

TEST_CASE("a diagnosis a node never answers ends the attempt at its bound all the same", "[hang]") {
  HangFixture f;
  TrackedJob& job = f.Running();
  const std::string id = job.info.job_id();
  f.Tell(f.a, id, 0, true, 3000);
  f.Tell(f.b, id, 1, true, 3000);
  f.Tick();
  REQUIRE(f.Diagnoses(f.a) == 1);
  f.watch.OnRanksDiagnosed(f.a, f.Answer(id, 0, "futex_wait_queue (python3)", ""));
  const Micros bound = static_cast<Micros>(f.config.hang_diagnosis_wait_ms) * 1000 + HangWatch::kAnswerSlack;
  f.clock.Advance(bound - 1);
  f.Tick();
  REQUIRE(f.Kills(f.a, id) == 0);
  f.clock.Advance(1);
  f.Tick();
  REQUIRE(f.Kills(f.a, id) == 1);
  CHECK_THAT(CurrentAttempt(job.info).failure_reason(), Catch::EndsWith("; no diagnosis from b"));
}

TEST_CASE("a diagnosis is kept within hang_diagnosis_kb, each rank's last lines first", "[hang]") {
  std::vector<std::pair<std::string, RankDiagnosis>> ranks;
  for (int rank = 0; rank < 4; ++rank) {
    RankDiagnosis d;
    d.set_rank(rank);
    d.set_wait_channel("futex_wait_queue (python3)");
    d.set_kernel_stack(std::string(5000, 's'));
    std::string tail;
    for (int line = 0; line < 500; ++line) tail += "line " + std::to_string(line) + "\n";
    d.set_log_tail(tail);
    ranks.emplace_back("node", d);
  }
  const std::string text = FormatHangDiagnosis(ranks, 4096);
  INFO(text);
  CHECK(text.size() <= 4096 + 4 * 16);  // each share, and the marks of what was cut
  CHECK_THAT(text, Catch::Contains("line 499"));
  CHECK_THAT(text, !Catch::Contains("line 0\n"));
  CHECK_THAT(text, Catch::Contains("rank 3 on node"));
}

TEST_CASE("hang_timeout_s: seconds or a duration, 0 for none, and negative, tiny or not a number is refused",
          "[hang][job_spec]") {
  CHECK(Parsed("entrypoint: x\n").hang_timeout_s() == 0);
  CHECK(Parsed("entrypoint: x\nhang_timeout_s: 30\n").hang_timeout_s() == 30);
  CHECK(Parsed("entrypoint: x\nhang_timeout_s: 10m\n").hang_timeout_s() == 600);
  CHECK(ErrorOf("entrypoint: x\nhang_timeout_s: -1\n").rfind("job.yaml:2:17: key 'hang_timeout_s'", 0) == 0);
  CHECK(ErrorOf("entrypoint: x\nhang_timeout_s: 0.5\n") ==
        "job.yaml:2:17: key 'hang_timeout_s': expected 0 (no hang detection) or a duration from 1 to 31536000 "
        "seconds, got 0.5");
  CHECK(ErrorOf("entrypoint: x\nhang_timeout_s: soon\n").rfind("job.yaml:2:17: key 'hang_timeout_s'", 0) == 0);
  CHECK(ErrorOf("entrypoint: x\nhang_timeout_s: [1]\n").rfind("job.yaml:2:17: key 'hang_timeout_s'", 0) == 0);
  JobSpec spec = Parsed("entrypoint: x\n");
  spec.set_hang_timeout_s(-3);
  CHECK(ValidateJobSpec(spec).message().rfind("key 'hang_timeout_s'", 0) == 0);
}
