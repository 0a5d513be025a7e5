// JobPlacement on its own over a job table, a node table and the attempts
// it starts: strict FIFO (the first job that must wait holds back those
// behind it, however small), whole gangs or nothing, and a job that no idle
// cluster could hold steps aside as INFEASIBLE, to be queued again and
// placed once a node that makes it fit joins.
#include <catch2/catch.hpp>

#include <string>

#include "daemon/head/job_adoption.h"
#include "daemon/head/job_attempts.h"
#include "daemon/head/job_placement.h"
#include "job_table_fixture.h"

using namespace clusterd;
using namespace clusterd::testing;

namespace {

struct PlacementFixture : JobConcernsFixture {
  JobAdoption adoption{&clock, config, AdoptionParts(), Send(), [] {}};
  JobAttempts attempts{&clock, config, AttemptParts(&adoption), [this] { placement.Schedule(); }};
  JobPlacement placement{&table, &nodes, &infeasible, &arrays, &attempts};

  // A job of `workers` one-CPU ranks, queued last, as a submit leaves it.
  TrackedJob& Queued(int workers = 1) {
    TrackedJob& job = Add(PENDING, "", workers);
    job.info.set_reason(JobQueue::kReason);
    table.queue().push_back(job.info.job_id());
    return job;
  }
  // The reason a client is shown for the job.
  std::string Shown(const TrackedJob& job) const {
    JobInfo shown = job.info;
    placement.ExplainWait(&shown);
    return shown.reason();
  }
};

}  // namespace

TEST_CASE("jobs are placed first come first served: a small job does not pass a gang that waits for room",
          "[jobs][placement]") {
  PlacementFixture f;
  const std::string a = f.AddNode("a", 2);
  TrackedJob& first = f.Queued(1);
  TrackedJob& gang = f.Queued(2);
  TrackedJob& small = f.Queued(1);
  f.placement.Schedule();
  REQUIRE(first.info.state() == RUNNING);
  REQUIRE(gang.info.state() == PENDING);
  REQUIRE_THAT(gang.info.reason(), Catch::StartsWith("waiting for resources: "));
  // One CPU is free and would hold it, but the gang came first.
  REQUIRE(f.FreeCpus(a) == 1);
  REQUIRE(small.info.state() == PENDING);
  REQUIRE(f.Launches(a, small.info.job_id()) == 0);
  REQUIRE_THAT(f.Shown(small), Catch::StartsWith("queued behind " + gang.info.job_id() + ", first in the queue"));

  // The first ends: the gang takes the node, and the small job still waits for it.
  f.attempts.OnRankExited(a, PlacementFixture::Exit(first.info.job_id(), 0, 0));
  REQUIRE(gang.info.state() == RUNNING);
  REQUIRE(f.Launches(a, gang.info.job_id()) == 1);
  REQUIRE(small.info.state() == PENDING);
  f.attempts.OnRankExited(a, PlacementFixture::Exit(gang.info.job_id(), 0, 0));
  f.attempts.OnRankExited(a, PlacementFixture::Exit(gang.info.job_id(), 0, 1));
  REQUIRE(small.info.state() == RUNNING);
  REQUIRE(f.table.queue().empty());
}

TEST_CASE("a gang that no set of nodes could hold is INFEASIBLE, holds nobody back, and is placed once a node joins",
          "[jobs][placement]") {
  PlacementFixture f;
  const std::string a = f.AddNode("a", 2);
  TrackedJob& gang = f.Queued(3);
  TrackedJob& later = f.Queued(1);
  f.placement.Schedule();
  REQUIRE(gang.info.state() == INFEASIBLE);
  REQUIRE_THAT(gang.info.reason(), Catch::StartsWith("cannot fit even on an idle cluster: needs 3 x"));
  REQUIRE(later.info.state() == RUNNING);  // not held back behind a job that cannot run
  REQUIRE(f.table.queue().empty());

  const std::string b = f.AddNode("b", 2, 2);
  f.infeasible.OnNodeJoined(*f.nodes.Find(b));
  REQUIRE(gang.info.state() == PENDING);
  f.placement.Schedule();
  REQUIRE(gang.info.state() == RUNNING);
  // All three ranks at once, over both nodes: rank 0's node is asked for a port.
  REQUIRE(f.PortRequests(a, gang.info.job_id()) + f.PortRequests(b, gang.info.job_id()) == 1);
  REQUIRE(f.FreeCpus(a) + f.FreeCpus(b) == 0);
}

TEST_CASE("a job queued behind a waiting one is judged at once: INFEASIBLE when no idle cluster could hold it",
          "[jobs][placement]") {
  PlacementFixture f;
  f.AddNode("a", 1);
  TrackedJob& running = f.Queued(1);
  TrackedJob& waiting = f.Queued(1);
  f.placement.Schedule();
  REQUIRE(running.info.state() == RUNNING);
  TrackedJob& fits_later = f.Queued(1);
  TrackedJob& never = f.Queued(4);
  f.placement.MarkIfInfeasible(fits_later);
  f.placement.MarkIfInfeasible(never);
  REQUIRE(waiting.info.state() == PENDING);
  REQUIRE(fits_later.info.state() == PENDING);
  REQUIRE(fits_later.info.reason() == JobQueue::kReason);
  REQUIRE(never.info.state() == INFEASIBLE);
  REQUIRE_THAT(never.info.reason(), Catch::StartsWith("cannot fit even on an idle cluster: needs 4 x"));
}
