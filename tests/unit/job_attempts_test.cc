// JobAttempts on its own over a job table and the concerns it talks to: an
// attempt takes its whole gang's share before anything starts, launches
// (at once on one node, after rank 0's node gave a port on several), hears
// only from the node running a rank of the current attempt, and once its
// gang is down succeeds, retries while max_failures allows, fails, or stops.
#include <catch2/catch.hpp>

#include <string>

#include <fmt/format.h>

#include "daemon/head/job_adoption.h"
#include "daemon/head/job_attempts.h"
#include "daemon/head/job_replay.h"
#include "job_table_fixture.h"

using namespace clusterd;
using namespace clusterd::testing;

namespace {

struct AttemptsFixture : JobConcernsFixture {
  int schedules = 0;  // how often an attempt's end asked to look at the queue again
  JobAdoption adoption{&clock, config, AdoptionParts(), Send(), [] {}};
  JobAttempts attempts{&clock, config, AttemptParts(&adoption), [this] { ++schedules; }};

  PortReserved Port(const std::string& job_id, int attempt, int port) {
    PortReserved message;
    message.set_job_id(job_id);
    message.set_attempt(attempt);
    message.set_port(port);
    return message;
  }
  // The journal's record of the job as a restarted head would read it.
  JobInfo Journalled(const std::string& job_id) { return LatestJobs(store.entries()).at(job_id); }
};

}  // namespace

TEST_CASE("an attempt takes its gang's share before it starts and gives it back once every rank is down",
          "[jobs][attempts]") {
  AttemptsFixture f;
  const std::string a = f.AddNode("a", 2);
  TrackedJob& job = f.Add(PENDING, "", 2);
  const std::string id = job.info.job_id();
  REQUIRE(f.attempts.Start(job, {{a, 2}}).empty());
  REQUIRE(job.info.state() == RUNNING);
  REQUIRE(job.info.reason() == "placed");
  REQUIRE(f.FreeCpus(a) == 0);
  // The whole gang on one node: launched at once, the node picks the port.
  REQUIRE(f.Launches(a, id) == 1);
  REQUIRE(f.sent[a].back().launch().pick_master_port());
  REQUIRE(f.PortRequests(a, id) == 0);

  // Nothing is left for another job: it takes nothing and keeps waiting.
  TrackedJob& other = f.Add();
  REQUIRE(f.attempts.Start(other, {{a, 1}}) == "waiting: node a could not give rank 0 its share");
  REQUIRE(other.info.state() == PENDING);
  REQUIRE(other.info.attempts_size() == 0);
  REQUIRE(f.Launches(a, other.info.job_id()) == 0);

  // Rank 0 is done, rank 1 runs on: its share is back, the journal knows.
  f.attempts.OnRankExited(a, AttemptsFixture::Exit(id, 0, 0));
  REQUIRE(job.info.state() == RUNNING);
  REQUIRE(f.FreeCpus(a) == 1);
  REQUIRE(f.schedules == 0);
  REQUIRE(f.store.entries().back().rank_end().rank() == 0);

  f.attempts.OnRankExited(a, AttemptsFixture::Exit(id, 0, 1));
  REQUIRE(job.info.state() == SUCCEEDED);
  REQUIRE(job.info.reason() == "all 2 ranks exited 0 (attempt 0)");
  REQUIRE(f.FreeCpus(a) == 2);
  REQUIRE(f.schedules == 1);  // what waits for the share may start now
  REQUIRE(f.Journalled(id).state() == SUCCEEDED);
}

TEST_CASE("a failed attempt is retried while max_failures allows, then the job is FAILED with the last failure",
          "[jobs][attempts]") {
  AttemptsFixture f;
  f.config.max_attempts_kept = 2;
  const std::string a = f.AddNode("a", 1);
  TrackedJob& job = f.Add();
  const std::string id = job.info.job_id();
  job.info.mutable_spec()->set_max_failures(2);
  job.info.mutable_spec()->mutable_restart_delay()->set_initial_s(0);  // no wait: retried at once
  for (int attempt = 0; attempt < 3; ++attempt) {
    INFO("attempt " << attempt);
    REQUIRE(f.attempts.Start(job, {{a, 1}}).empty());
    REQUIRE(CurrentAttempt(job.info).attempt() == attempt);
    f.attempts.OnRankExited(a, AttemptsFixture::Exit(id, attempt, 0, 1));
    REQUIRE(f.FreeCpus(a) == 1);
    if (attempt == 2) break;
    REQUIRE(job.info.state() == RESTARTING);
    REQUIRE(job.info.reason() ==
            fmt::format("attempt {0} failed: rank 0 exited with code 1 on node a (attempt {0})", attempt));
    REQUIRE(f.table.queue().front() == id);  // a retry goes first
    f.table.queue().pop_front();
  }
  REQUIRE(job.info.state() == FAILED);
  REQUIRE(job.info.reason() == "rank 0 exited with code 1 on node a (attempt 2)");
  REQUIRE(f.Journalled(id).state() == FAILED);
  // Three attempts ran; the oldest beyond max_attempts_kept is summed up.
  REQUIRE(AttemptCount(job.info) == 3);
  REQUIRE(job.info.attempts_size() == 2);
  REQUIRE(job.info.older_attempts().count() == 1);
}

TEST_CASE("only the node running a rank of the current attempt speaks for it", "[jobs][attempts]") {
  AttemptsFixture f;
  const std::string a = f.AddNode("a", 1), b = f.AddNode("b", 1, 2);
  TrackedJob& job = f.Add();
  const std::string id = job.info.job_id();
  job.info.mutable_spec()->set_max_failures(1);
  job.info.mutable_spec()->mutable_restart_delay()->set_initial_s(0);
  REQUIRE(f.attempts.Start(job, {{a, 1}}).empty());
  f.attempts.OnRankExited(b, AttemptsFixture::Exit(id, 0, 0, 1));  // b does not run rank 0
  f.attempts.OnRankExited(a, AttemptsFixture::Exit(id, 0, 3, 1));  // no rank 3
  REQUIRE(job.info.state() == RUNNING);
  f.attempts.OnRankExited(a, AttemptsFixture::Exit(id, 0, 0, 1));
  REQUIRE(job.info.state() == RESTARTING);
  f.table.queue().pop_front();
  REQUIRE(f.attempts.Start(job, {{a, 1}}).empty());
  // Attempt 0's exit, told again late, is not attempt 1's.
  f.attempts.OnRankExited(a, AttemptsFixture::Exit(id, 0, 0, 1));
  REQUIRE(job.info.state() == RUNNING);
  REQUIRE(CurrentAttempt(job.info).attempt() == 1);
  REQUIRE(f.FreeCpus(a) == 0);
}

TEST_CASE("a gang on two nodes launches once rank 0's node gave a port, and one stopped before that never launches",
          "[jobs][attempts]") {
  AttemptsFixture f;
  const std::string a = f.AddNode("a", 1), b = f.AddNode("b", 1, 2);
  TrackedJob& job = f.Add(PENDING, "", 2);
  const std::string id = job.info.job_id();
  REQUIRE(f.attempts.Start(job, {{a, 1}, {b, 1}}).empty());
  REQUIRE(f.PortRequests(a, id) == 1);
  REQUIRE(f.PortRequests(b, id) == 0);
  REQUIRE(f.Launches(a, id) + f.Launches(b, id) == 0);

  SECTION("the port comes from rank 0's node: both launch, and the journal holds where the ranks meet") {
    f.attempts.OnPortReserved(b, f.Port(id, 0, 29400));  // not rank 0's node
    REQUIRE(f.Launches(a, id) + f.Launches(b, id) == 0);
    f.attempts.OnPortReserved(a, f.Port(id, 0, 29500));
    REQUIRE(f.Launches(a, id) == 1);
    REQUIRE(f.Launches(b, id) == 1);
    REQUIRE(CurrentAttempt(job.info).master_port() == 29500);
    REQUIRE(f.Journalled(id).attempts(0).master_port() == 29500);
  }
  SECTION("stopped while the port is found: nothing was launched, so nothing is killed, and it is STOPPED") {
    f.attempts.End(job, AttemptEnding::kStop, "stopped by a test");
    REQUIRE(job.info.state() == STOPPED);
    REQUIRE(job.info.reason() == "stopped by a test");
    REQUIRE(f.FreeCpus(a) == 1);
    REQUIRE(f.FreeCpus(b) == 1);
    f.attempts.OnPortReserved(a, f.Port(id, 0, 29500));  // the answer comes late
    REQUIRE(f.Launches(a, id) + f.Launches(b, id) == 0);
    REQUIRE(f.Kills(a, id) + f.Kills(b, id) == 0);
    REQUIRE(job.info.state() == STOPPED);
  }
}

TEST_CASE("an attempt that is ending keeps its first ending: ranks that fail as they are stopped do not retry it",
          "[jobs][attempts]") {
  AttemptsFixture f;
  const std::string a = f.AddNode("a", 2);
  TrackedJob& job = f.Add(PENDING, "", 2);
  const std::string id = job.info.job_id();
  job.info.mutable_spec()->set_max_failures(3);
  REQUIRE(f.attempts.Start(job, {{a, 2}}).empty());
  f.attempts.End(job, AttemptEnding::kStop, "stopped by a test");
  REQUIRE(f.Kills(a, id) == 1);
  REQUIRE(f.sent[a].back().kill().grace_ms() == f.config.stop_grace_ms);
  REQUIRE(job.info.state() == RUNNING);  // until its ranks are down
  f.attempts.OnRankExited(a, AttemptsFixture::Exit(id, 0, 1, 1));
  f.attempts.End(job, AttemptEnding::kFail, "a later failure");
  REQUIRE(job.info.state() == RUNNING);
  f.attempts.OnRankExited(a, AttemptsFixture::Exit(id, 0, 0, 0, 15));
  REQUIRE(job.info.state() == STOPPED);
  REQUIRE(job.info.reason() == "stopped by a test");
  REQUIRE(AttemptCount(job.info) == 1);
  REQUIRE(f.FreeCpus(a) == 2);
}

TEST_CASE("a rank its node killed for its memory limit fails the job saying out of memory and the limit, and the "
          "launch carries each rank's limits",
          "[jobs][attempts][limits]") {
  AttemptsFixture f;
  RegisterNode with_memory = AttemptsFixture::Node("a", 1);
  (*with_memory.mutable_total()->mutable_amounts())["memory"] = 8.0 * (1 << 30);
  auto node = f.nodes.Register(with_memory);
  REQUIRE(node.ok());
  const std::string a = (*node)->node_id();
  TrackedJob& job = f.Add();
  const std::string id = job.info.job_id();
  auto& amounts = *job.info.mutable_spec()->mutable_resources_per_worker()->mutable_amounts();
  amounts["memory"] = 4.0 * (1 << 30);
  amounts["CPU"] = 1;
  REQUIRE(f.attempts.Start(job, {{a, 1}}).empty());
  REQUIRE(f.sent[a].back().launch().memory_limit_bytes() == 4LL << 30);
  REQUIRE(f.sent[a].back().launch().cpus_per_rank() == 1);
  RankExited exit = AttemptsFixture::Exit(id, 0, 0, 0, 9);
  exit.set_out_of_memory(true);
  exit.set_memory_limit_bytes(4LL << 30);
  f.attempts.OnRankExited(a, exit);
  REQUIRE(job.info.state() == FAILED);
  REQUIRE(job.info.reason() == "rank 0 was killed by signal 9: out of memory (limit 4 GiB) on node a (attempt 0)");
  REQUIRE(job.info.attempts(0).ranks(0).out_of_memory());
  REQUIRE(job.info.attempts(0).ranks(0).memory_limit_bytes() == 4LL << 30);
}
