// The head's queue seen from a job waiting in it: with one user, one
// priority and no time limits, first come first served, so a job behind a
// waiting one names what it waits behind, and one that could never fit
// says so at once, through HeadCore with fake agents.
#include <catch2/catch.hpp>

#include "head_harness.h"

using namespace clusterd;
using namespace clusterd::testing;

// Strict FIFO: the first job that must wait holds back those behind it,
// which say so rather than a bare "queued"; the record keeps "queued", so
// that the queue moving writes nothing.
TEST_CASE("a job queued behind one that waits names that job as what it waits for", "[jobs]") {
  Harness h;
  h.AddNode("a", 2);
  std::string running = h.Submit(1, 1, PACK);
  std::string first = h.Submit(1, 2, PACK);  // waits for resources
  std::string behind = h.Submit(1, 1, PACK);  // would fit, but comes after it
  REQUIRE(h.Job(first).reason().rfind("waiting for resources", 0) == 0);
  REQUIRE(h.Job(behind).state() == PENDING);
  REQUIRE(h.Job(behind).reason() == "queued behind " + first + ", first in the queue, which waits (" +
                                        h.Job(first).reason() + "): jobs start in the order they came");
  ListJobsReply listed = *h.head->jobs().ListPage(ListJobsRequest());
  REQUIRE(listed.jobs(2).reason() == h.Job(behind).reason());
  h.head->jobs().ForEachJob([&](const JobInfo& job) {
    if (job.job_id() == behind) REQUIRE(job.reason() == "queued");
  });
  // The first one stopped, the one behind it starts.
  REQUIRE(h.head->jobs().Stop(first).ok());
  REQUIRE(h.Job(behind).state() == RUNNING);
}

// Behind a waiting job a job is not tried; one that could never fit must
// still say so at once, and go back to waiting once a node makes it fit.
TEST_CASE("a job behind a waiting one that fits no idle cluster is INFEASIBLE at once and queued again when a node joins",
          "[jobs]") {
  Harness h;
  h.AddNode("a", 2);
  std::string running = h.Submit(1, 1, PACK);
  std::string first = h.Submit(1, 2, PACK);           // waits for resources
  std::string gpus = h.Submit(1, 1, PACK, 0, /*gpus=*/1);  // no node has a GPU
  REQUIRE(h.Job(gpus).state() == INFEASIBLE);
  REQUIRE(h.Job(gpus).reason().rfind("cannot fit even on an idle cluster: needs 1 x {1 CPU, 1 GPU} (PACK)", 0) == 0);
  std::string fits = h.Submit(1, 1, PACK);  // would fit an idle cluster: only queued
  REQUIRE(h.Job(fits).state() == PENDING);
  REQUIRE(h.Job(fits).reason().rfind("queued behind " + first, 0) == 0);

  // A GPU: it fits now, on g, beside node a that `first` waits for (which
  // fits on neither node now): backfill starts it, as it cannot delay `first`.
  h.AddNode("g", 1, 1);
  REQUIRE(h.Job(gpus).state() == RUNNING);
  REQUIRE(h.Job(first).state() == PENDING);
  REQUIRE(h.Job(fits).reason().rfind("queued behind " + first, 0) == 0);
}

// Behind a waiting job, a job made INFEASIBLE by a node's death must not
// keep that state and its reason once the node is back; and one that can
// never fit must not be said to be PENDING once a node comes back.
TEST_CASE("jobs behind a waiting one are judged again as nodes leave and come back", "[jobs]") {
  Harness h;
  for (const char* node : {"a", "b", "c"}) h.AddNode(node, 2);
  std::string running = h.Submit(1, 2, PACK);                 // a node's whole
  std::string first = h.Submit(3, 2, STRICT_SPREAD);          // needs all three idle: waits
  std::string fits_when_back = h.Submit(3, 1, STRICT_SPREAD);  // needs all three
  std::string never = h.Submit(4, 1, STRICT_SPREAD);          // needs four
  REQUIRE(h.Job(first).reason().rfind("waiting for resources", 0) == 0);
  REQUIRE(h.Job(fits_when_back).state() == PENDING);
  REQUIRE(h.Job(never).state() == INFEASIBLE);

  h.head->OnAgentDisconnected(h.agents["c"].get(), "connection to the node agent lost");
  h.Advance(500);
  CHECK(h.Job(fits_when_back).state() == INFEASIBLE);
  CHECK(h.Job(never).reason().find("but there are 2 schedulable nodes") != std::string::npos);

  h.AddNode("c", 2);
  h.Advance(500);
  const JobInfo back = h.Job(fits_when_back);
  INFO(back.reason());
  CHECK(back.state() == PENDING);
  CHECK(back.reason().rfind("queued behind " + first, 0) == 0);
  const JobInfo still = h.Job(never);
  INFO(still.reason());
  CHECK(still.state() == INFEASIBLE);
  CHECK(still.reason().find("but there are 3 schedulable nodes") != std::string::npos);
}
