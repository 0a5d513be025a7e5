// PendingDemands on its own over a job table: the waiting jobs summed up by
// shape, kept in step with their states, and at most kShapes entries.
#include <catch2/catch.hpp>

#include <string>

#include "daemon/head/pending_demands.h"
#include "job_table_fixture.h"

using namespace clusterd;
using namespace clusterd::testing;

namespace {

std::vector<PendingDemand> Summary(const PendingDemands& demands) {
  return demands.Summary([](JobInfo* shown) { shown->set_reason("shown: " + shown->reason()); });
}

}  // namespace

TEST_CASE("pending demands count the waiting jobs by shape, first submitted first, and drop those that start",
          "[jobs][demands]") {
  JobTableFixture f;
  PendingDemands demands(&f.table);
  f.table.Subscribe(&demands);
  TrackedJob& small = f.Add(PENDING, "", 1);
  f.Add(PENDING, "", 4);
  f.Add(PENDING, "", 1);
  TrackedJob& huge = f.Add(PENDING, "", 64);
  f.table.SetState(huge, INFEASIBLE, "no node set holds it");
  auto summary = Summary(demands);
  REQUIRE(summary.size() == 3);
  REQUIRE(summary[0].job_id() == small.info.job_id());
  REQUIRE(summary[0].num_workers() == 1);
  REQUIRE(summary[0].more_like_it() == 1);
  REQUIRE(summary[1].num_workers() == 4);
  REQUIRE(summary[2].infeasible());
  REQUIRE(summary[2].reason() == "shown: no node set holds it");  // as the caller explains it

  // A job with a live attempt asks for nothing more, even while RESTARTING.
  small.active = true;
  f.table.SetState(small, RUNNING, "placed");
  REQUIRE(Summary(demands)[0].more_like_it() == 0);
  f.table.SetState(small, RESTARTING, "attempt 0 failed");
  REQUIRE(Summary(demands)[0].more_like_it() == 0);
  small.active = false;
  f.table.SetState(small, RESTARTING, "retrying in 1s");
  REQUIRE(Summary(demands)[0].more_like_it() == 1);
}

TEST_CASE("pending demands list at most kShapes entries, the shapes past them summed in the last", "[jobs][demands]") {
  JobTableFixture f;
  PendingDemands demands(&f.table);
  f.table.Subscribe(&demands);
  for (int workers = 1; workers <= PendingDemands::kShapes + 5; ++workers) f.Add(PENDING, "", workers);
  auto summary = Summary(demands);
  REQUIRE(summary.size() == PendingDemands::kShapes);
  const PendingDemand& rest = summary.back();
  REQUIRE(rest.num_workers() == 0);
  REQUIRE(rest.more_like_it() == 5);  // 6 jobs of 6 shapes, one entry
  REQUIRE(rest.reason() == "6 more jobs of 6 other shapes, not listed");
}
