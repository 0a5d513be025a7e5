// JobAdoption on its own: a head's job concerns over a journal that another
// set of them wrote, as after a restart. Waiting jobs queue again, a retry
// waits out the rest of its delay, a running job is adopted when its ranks'
// agents report them all and fails at the adoption deadline (on the fake
// clock, not before) when one does not come back; a rank of an attempt
// that is over is stopped and holds its share until it exits.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "daemon/head/attempt_interrupts.h"
#include "daemon/head/job_adoption.h"
#include "daemon/head/job_attempts.h"
#include "daemon/head/job_replay.h"
#include "job_table_fixture.h"

using namespace clusterd;
using namespace clusterd::testing;

namespace {

// The job concerns of one head's life.
struct Head : JobConcernsFixture {
  int schedules = 0;  // how often the queue was to be looked at again
  JobAdoption adoption{&clock, config, AdoptionParts(), Send(), [this] { ++schedules; }};
  JobAttempts attempts{&clock, config, AttemptParts(&adoption), [this] { ++schedules; }};
  AttemptInterrupts interrupts{&table, &attempts, &retention, [this] { ++schedules; }};

  // This head starts over the journal `before` wrote, at `before`'s time.
  void StartAfter(const Head& before) {
    for (const JournalEntry& entry : before.store.entries()) REQUIRE(store.Append(entry).ok());
    clock.Advance(before.clock.NowMicros() - clock.NowMicros());
    REQUIRE(adoption.Restore().ok());
  }
  // `name` registering again, with `ranks` of the job's attempt 0 still running.
  static RegisterNode Back(const std::string& name, const std::string& job_id, const std::vector<int>& ranks) {
    RegisterNode node = Node(name, 2);
    for (int rank : ranks) {
      LiveRank* live = node.add_live_ranks();
      live->set_job_id(job_id);
      live->set_attempt(0);
      live->set_rank(rank);
      live->set_pid(100 + rank);
    }
    return node;
  }
  // `request` registers and its ranks are adopted; the node's id.
  std::string Registers(const RegisterNode& request) {
    auto node = nodes.Register(request);
    REQUIRE(node.ok());
    adoption.AdoptRanks(**node, request);
    return (*node)->node_id();
  }
  // The job's deadlines looked at now; when the next one is (0: none).
  Micros CheckDeadlines(TrackedJob& job) {
    NextWake wake;
    interrupts.CheckDeadlines(job, clock.NowMicros(), &wake);
    return wake.at;
  }
};

// A head that ran a job of two ranks on node "a" until it went away.
std::string RunTwoRanks(Head& before) {
  const std::string a = before.AddNode("a", 2);
  TrackedJob& job = before.Add(PENDING, "", 2);
  REQUIRE(before.attempts.Start(job, {{a, 2}}).empty());
  before.clock.AdvanceMillis(5'000);
  return job.info.job_id();
}

}  // namespace

TEST_CASE("a restarted head adopts a running job once every rank is reported, and it runs on past the deadline",
          "[jobs][adoption]") {
  Head before, after;
  const std::string id = RunTwoRanks(before);
  after.StartAfter(before);
  TrackedJob* job = after.table.Find(id);
  REQUIRE(job != nullptr);
  REQUIRE(job->info.state() == RUNNING);
  REQUIRE(job->run.adopting);
  REQUIRE(after.table.queue().empty());  // its ranks may still run: not placed again

  const std::string a = after.Registers(Head::Back("a", id, {0, 1}));
  REQUIRE_FALSE(job->run.adopting);
  REQUIRE(after.FreeCpus(a) == 0);  // the ranks' shares are theirs again
  REQUIRE(CurrentAttempt(job->info).ranks(1).pid() == 101);
  REQUIRE(LatestJobs(after.store.entries()).at(id).attempts(0).ranks(1).pid() == 101);  // journalled

  after.clock.AdvanceMillis(60'000);
  after.CheckDeadlines(*job);
  REQUIRE(job->info.state() == RUNNING);
  REQUIRE(after.Kills(a, id) == 0);
  after.attempts.OnRankExited(a, Head::Exit(id, 0, 0));
  after.attempts.OnRankExited(a, Head::Exit(id, 0, 1));
  REQUIRE(job->info.state() == SUCCEEDED);
  REQUIRE(after.FreeCpus(a) == 2);
}

TEST_CASE("a rank that does not come back fails its attempt at the adoption deadline, not before",
          "[jobs][adoption]") {
  Head before, after;
  const std::string id = RunTwoRanks(before);
  after.StartAfter(before);
  const Micros restarted = after.clock.NowMicros();
  TrackedJob& job = *after.table.Find(id);
  const std::string a = after.Registers(Head::Back("a", id, {0}));
  REQUIRE(job.run.adopting);

  after.clock.AdvanceMillis(9'999);
  REQUIRE(after.CheckDeadlines(job) == restarted + 10'000'000);
  REQUIRE(job.run.ending == AttemptEnding::kNone);
  REQUIRE(after.Kills(a, id) == 0);

  after.clock.AdvanceMillis(1);
  after.CheckDeadlines(job);
  REQUIRE(after.Kills(a, id) == 1);  // the rank that came back is stopped
  REQUIRE(CurrentAttempt(job.info).failure_reason() == "rank 1 did not come back after the head restarted");
  after.attempts.OnRankExited(a, Head::Exit(id, 0, 0, 0, 15));
  REQUIRE(job.info.state() == FAILED);  // max_failures 0
  REQUIRE(job.info.reason() == "rank 1 did not come back after the head restarted");
}

// The attempt was already failing when the head went away (rank 0 failed,
// rank 1 was told to stop); rank 1 never comes back. At the deadline the
// attempt ends as the failure it was, instead of staying RUNNING for ever.
TEST_CASE("an attempt failing before the restart whose other rank does not come back ends at the adoption deadline",
          "[jobs][adoption]") {
  Head before, after;
  const std::string id = RunTwoRanks(before);
  before.attempts.OnRankExited(before.table.Find(id)->run.slots[0].node_id, Head::Exit(id, 0, 0, 3));
  REQUIRE(before.table.Find(id)->run.ending == AttemptEnding::kFail);
  REQUIRE(before.table.Find(id)->info.state() == RUNNING);  // rank 1 is being stopped
  after.StartAfter(before);
  TrackedJob& job = *after.table.Find(id);
  REQUIRE(job.run.adopting);
  after.Registers(Head::Back("a", id, {}));  // the node is back; rank 1 is not

  after.clock.AdvanceMillis(10'000);
  after.CheckDeadlines(job);
  CHECK_FALSE(job.run.adopting);
  REQUIRE(job.info.state() == FAILED);  // max_failures 0
  CHECK(job.info.reason().find("rank 0") != std::string::npos);
}

TEST_CASE("a rank that exited while the head was away counts, told by the node the journal placed it on",
          "[jobs][adoption]") {
  Head before, after;
  const std::string id = RunTwoRanks(before);
  after.StartAfter(before);
  TrackedJob& job = *after.table.Find(id);
  const std::string b = after.AddNode("b", 2, 2);
  const std::string a = after.Registers(Head::Back("a", id, {0}));
  after.attempts.OnRankExited(b, Head::Exit(id, 0, 1));  // b never ran it
  REQUIRE(job.run.adopting);
  after.attempts.OnRankExited(a, Head::Exit(id, 0, 1));
  REQUIRE_FALSE(job.run.adopting);

  after.clock.AdvanceMillis(60'000);
  after.CheckDeadlines(job);
  REQUIRE(job.info.state() == RUNNING);
  REQUIRE(after.Kills(a, id) == 0);
  after.attempts.OnRankExited(a, Head::Exit(id, 0, 0));
  REQUIRE(job.info.state() == SUCCEEDED);
}

TEST_CASE("a rank of an attempt that is over is told to stop and holds its share until it exits",
          "[jobs][adoption]") {
  Head f;
  TrackedJob& job = f.Add(SUCCEEDED);
  const std::string id = job.info.job_id();
  RankInfo* rank = job.info.add_attempts()->add_ranks();
  rank->set_rank(0);
  rank->set_node_name("a");
  const std::string a = f.Registers(Head::Back("a", id, {0}));
  REQUIRE(f.Kills(a, id) == 1);
  REQUIRE(f.sent[a].back().kill().attempt() == 0);
  REQUIRE(f.sent[a].back().kill().grace_ms() == f.config.stop_grace_ms);
  REQUIRE(f.FreeCpus(a) == 1);  // no new rank is given its CPU while it runs

  f.adoption.ReleaseRemnant(a, Head::Exit(id, 0, 0));
  REQUIRE(f.FreeCpus(a) == 2);
  REQUIRE(f.schedules == 1);  // what waited for that share may run now
  f.adoption.ReleaseRemnant(a, Head::Exit(id, 0, 0));  // told twice: given back once
  REQUIRE(f.FreeCpus(a) == 2);
  REQUIRE(f.schedules == 1);
}

TEST_CASE("a restarted head queues its waiting jobs again, a retry waits the rest of its delay, and no job number "
          "is handed out twice",
          "[jobs][adoption][journal]") {
  Head before, after;
  TrackedJob& waiting = before.Add();
  TrackedJob& retrying = before.Add(RUNNING);
  retrying.info.set_retry_at_unix_ms(before.clock.UnixMillis() + 30'000);
  before.table.SetState(retrying, RESTARTING, "retrying in 30s after attempt 0 failed");
  TrackedJob& done = before.Add(SUCCEEDED);
  before.clock.AdvanceMillis(10'000);

  after.StartAfter(before);
  REQUIRE(after.table.queue().size() == 1);
  REQUIRE(after.table.queue().front() == waiting.info.job_id());
  const TrackedJob& restored = *after.table.Find(retrying.info.job_id());
  REQUIRE(restored.info.state() == RESTARTING);
  REQUIRE(restored.retry_at == after.clock.NowMicros() + 20'000'000);
  REQUIRE(after.table.Find(done.info.job_id())->info.state() == SUCCEEDED);
  REQUIRE(after.table.NewJobId() == "job-0004");
}
