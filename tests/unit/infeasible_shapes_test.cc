// InfeasibleShapes on its own over a job table and a node table: INFEASIBLE
// jobs grouped by shape, queued again when a node that can hold a worker
// joins, and their reasons brought up to date once per rejudging.
#include <catch2/catch.hpp>

#include <string>

#include "daemon/head/infeasible_shapes.h"
#include "daemon/head/node_table.h"
#include "job_table_fixture.h"

using namespace clusterd;
using namespace clusterd::testing;

TEST_CASE("infeasible jobs wait by shape, and are queued again, in submission order, once a node makes them fit",
          "[jobs][infeasible]") {
  JobTableFixture f;
  NodeTable nodes(&f.clock, 2'000'000);
  InfeasibleShapes infeasible(&f.table, &nodes);
  f.table.Subscribe(&infeasible);
  REQUIRE(nodes.Register(JobTableFixture::Node("small", 2)).ok());
  TrackedJob& first = f.Add(PENDING, "", 4);
  TrackedJob& second = f.Add(PENDING, "", 4);
  TrackedJob& other = f.Add(PENDING, "", 8);
  for (TrackedJob* job : {&other, &second, &first}) f.table.SetState(*job, INFEASIBLE, "needs more CPUs");
  REQUIRE(infeasible.size() == 2);  // two shapes, three jobs

  // Nodes left and came: the shapes' reasons are judged again, once, and
  // count the nodes as they are now; nothing is journalled per job.
  infeasible.MarkStale();
  REQUIRE(infeasible.RejudgeIfStale());
  REQUIRE_FALSE(infeasible.RejudgeIfStale());
  const std::string* reason = infeasible.ReasonOf(first);
  REQUIRE(reason != nullptr);
  REQUIRE(*reason != "needs more CPUs");
  REQUIRE(first.info.reason() == "needs more CPUs");

  // A node of 4 CPUs makes the 4-worker shape fit (with the node of 2),
  // not the 8-worker one.
  auto joined = nodes.Register(JobTableFixture::Node("big", 4, 2));
  REQUIRE(joined.ok());
  infeasible.OnNodeJoined(**joined);
  REQUIRE(first.info.state() == PENDING);
  REQUIRE(first.info.reason() == JobQueue::kReason);
  REQUIRE(second.info.state() == PENDING);
  REQUIRE(other.info.state() == INFEASIBLE);
  REQUIRE(infeasible.size() == 1);
  REQUIRE(f.table.queue().front() == first.info.job_id());  // submission order, not the order they became INFEASIBLE
  REQUIRE(f.table.queue().size() == 2);
}
