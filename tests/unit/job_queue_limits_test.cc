// The head's queue under a flood: submits past max_submitted_jobs(_per_user)
// are refused whole, what waits is summed up by shape, and what nodes
// joining or a restart cost does not grow with the number of waiting jobs.
#include <catch2/catch.hpp>

#include <chrono>

#include "cli/status_printer.h"
#include "daemon/head/job_queue.h"
#include "head_harness.h"

using namespace clusterd;
using namespace clusterd::testing;

namespace {

// A head with the limits given (0: none).
void Limit(Harness& h, int64_t per_user, int64_t per_cluster) {
  h.config.max_submitted_jobs_per_user = per_user;
  h.config.max_submitted_jobs = per_cluster;
  h.head = std::make_unique<HeadCore>(&h.clock, h.config, &h.store, &h.logs, nullptr);
}

SubmitJobRequest Array(Harness& h, int count) {
  SubmitJobRequest request = h.Request(1, 1, PACK);
  request.mutable_spec()->mutable_array()->set_count(count);
  return request;
}

const std::string kPerUser =
    "refused: user admin has {} not yet finished, and {} more would pass the limit of {} per user "
    "(config max_submitted_jobs_per_user); nothing was submitted. Wait for jobs to finish, or stop some "
    "(clusterctl stop)";

}  // namespace

TEST_CASE("a submit past max_submitted_jobs_per_user is refused whole, naming the limit, the count and its key",
          "[jobs][limits]") {
  QuietLogs quiet;
  Harness h;
  Limit(h, 5, 0);
  h.AddNode("a", 1);
  const std::string running = h.Submit(1, 1, PACK);
  h.Submit(1, 1, PACK);
  h.Submit(1, 1, PACK);  // 3 not yet finished: one runs, two wait

  auto refused = h.head->jobs().Submit(Array(h, 3));
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == Status::Code::kResourceExhausted);
  CHECK(refused.status().message() == fmt::format(kPerUser, "3 jobs", "3 jobs", 5));
  CHECK(h.head->jobs().List().size() == 3);  // none of the array was made

  REQUIRE(h.head->jobs().Submit(Array(h, 2)).ok());  // exactly up to the limit
  CHECK(h.head->jobs().List().size() == 5);
  auto one_more = h.head->jobs().Submit(h.Request(1, 1, PACK));
  REQUIRE_FALSE(one_more.ok());
  CHECK(one_more.status().message() == fmt::format(kPerUser, "5 jobs", "1 job", 5));

  // A job that finishes makes room; a finished one is not counted.
  h.Exit("a", running, 0, 0, 0);
  REQUIRE(h.Job(running).state() == SUCCEEDED);
  CHECK(h.head->jobs().Submit(h.Request(1, 1, PACK)).ok());
}

TEST_CASE("a submit past max_submitted_jobs is refused whole, naming the cluster's limit and its key",
          "[jobs][limits]") {
  QuietLogs quiet;
  Harness h;
  Limit(h, 0, 4);
  REQUIRE(h.head->jobs().Submit(Array(h, 4)).ok());  // no node: all INFEASIBLE, all counted
  auto refused = h.head->jobs().Submit(h.Request(1, 1, PACK));
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message() ==
        "refused: the cluster has 4 jobs not yet finished, and 1 job more would pass its limit of 4 (config "
        "max_submitted_jobs); nothing was submitted. Wait for jobs to finish, or stop some (clusterctl stop)");
  CHECK(h.head->jobs().List().size() == 4);
}

TEST_CASE("the defaults bound the queue: 20,000 per user, 100,000 in the cluster", "[jobs][limits]") {
  Config defaults;
  CHECK(defaults.max_submitted_jobs_per_user == 20000);
  CHECK(defaults.max_submitted_jobs == 100000);
}

// `clusterctl status` printed a line per waiting job of another name or
// reason: 16 MB for 90,000 jobs. Now a line per shape of what they ask.
TEST_CASE("clusterctl status sums up the waiting jobs by what they ask, however many there are",
          "[jobs][status][limits]") {
  QuietLogs quiet;
  Harness h;
  h.AddNode("a", 2);
  const std::string running = h.Submit(1, 2, PACK);  // the node's whole
  for (int i = 0; i < 3000; ++i) {
    SubmitJobRequest request = h.Request(1, 1, PACK);
    request.mutable_spec()->set_name(fmt::format("sweep-{}", i));  // every name its own
    (*request.mutable_spec()->mutable_resources_per_worker()->mutable_amounts())["CPU"] = 0.5;
    REQUIRE(h.head->jobs().Submit(request).ok());
  }
  REQUIRE(h.head->jobs().Submit(Array(h, 1200)).ok());
  for (int i = 0; i < 500; ++i) h.Submit(2, 1, SPREAD, 0, /*gpus=*/1);  // no GPU anywhere
  const ClusterStatus status = h.head->GetStatus();
  REQUIRE(status.pending_size() == 3);
  CHECK(cli::FormatDemands(status.pending()) ==
        " 3,000 jobs of 1 x {0.5 CPU}: waiting for resources: needs 1 x {0.5 CPU} (PACK); 1 schedulable node holds "
        "0 such workers; e.g. on a: CPU: 0.5 > 0 (first: job-0002, sweep-0)\n"
        " 1,200 jobs of 1 x {1 CPU}: queued behind job-0002, first in the queue, which waits (waiting for "
        "resources: needs 1 x {0.5 CPU} (PACK); 1 schedulable node holds 0 such workers; e.g. on a: CPU: 0.5 > 0): "
        "jobs start in the order they came (first: job-3002, train)\n"
        " 500 jobs of 2 x {1 CPU, 1 GPU}: INFEASIBLE: cannot fit even on an idle cluster: needs 2 x {1 CPU, 1 GPU} "
        "(SPREAD); 1 schedulable node holds 0 such workers; e.g. on a: GPU: 1 > 0 (first: job-4202, train)\n");
}

TEST_CASE("the head sends at most kDemandShapes demands, the shapes past them summed in the last",
          "[jobs][status][limits]") {
  QuietLogs quiet;
  Harness h;  // no node: everything is INFEASIBLE
  const int shapes = 5000;
  for (int i = 0; i < shapes; ++i) h.Submit(1, 1 + i, PACK);  // each asks its own number of CPUs
  const ClusterStatus status = h.head->GetStatus();
  REQUIRE(status.pending_size() == JobManager::kDemandShapes);
  const PendingDemand& rest = status.pending(JobManager::kDemandShapes - 1);
  CHECK(rest.num_workers() == 0);
  const int listed = JobManager::kDemandShapes - 1;
  CHECK(rest.reason() == fmt::format("{} more jobs of {} other shapes, not listed", shapes - listed, shapes - listed));
  const std::string out = cli::FormatDemands(status.pending());
  CHECK(std::count(out.begin(), out.end(), '\n') == JobManager::kDemandShapes);
  CHECK(out.find(fmt::format(" ... {} more jobs of {} other shapes, not listed\n", shapes - listed,
                             shapes - listed)) != std::string::npos);
  CHECK(out.size() < 8000);  // a screenful, whatever the queue holds
}

namespace {

// Nodes that cannot hold any of `waiting` INFEASIBLE jobs join one by one,
// each followed by a Tick (which judges the INFEASIBLE jobs again): the
// journal entries written, and the time taken.
struct JoinCost {
  size_t journal_entries = 0;
  double ms = 0;
};

JoinCost JoinPastInfeasible(int waiting, int joins) {
  QuietLogs quiet;
  Harness h;
  Limit(h, 0, 0);
  h.AddNode("first", 1);
  REQUIRE(h.head->jobs().Submit([&] {
    SubmitJobRequest request = h.Request(1, 1, PACK, 0, /*gpus=*/1);
    request.mutable_spec()->mutable_array()->set_count(waiting);
    return request;
  }()).ok());
  const size_t before = h.store.entries().size();
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < joins; ++i) {
    h.AddNode(fmt::format("n{}", i), 1);  // a CPU: holds none of them
    h.head->Tick();
  }
  JoinCost cost;
  cost.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  cost.journal_entries = h.store.entries().size() - before;
  // Each INFEASIBLE job shows the reason as it is now, counting the nodes.
  const JobInfo last = h.Job(fmt::format("job-{:04d}", waiting));
  INFO(last.reason());
  CHECK(last.state() == INFEASIBLE);
  CHECK(last.reason().find(fmt::format("; {} schedulable nodes hold 0 such workers", joins + 1)) != std::string::npos);
  return cost;
}

}  // namespace

// With 60,000 waiting jobs one node joining froze the head's loop for
// 21.7 s: each INFEASIBLE job was queued again through a linear search of
// the queue and journalled with a new reason. Now nodes judge each shape
// once: the work is counted (journal entries) and timed against a 10x
// smaller queue in the same run.
TEST_CASE("nodes joining past 20,000 INFEASIBLE jobs cost what they cost past 2,000", "[jobs][limits][scale]") {
  const JoinCost small = JoinPastInfeasible(2000, 10);
  const JoinCost big = JoinPastInfeasible(20000, 10);
  INFO("2,000 waiting: " << small.ms << " ms, " << small.journal_entries << " journal entries; 20,000 waiting: "
                         << big.ms << " ms, " << big.journal_entries << " journal entries");
  // Nothing is written per waiting job (the nodes' own journal is another store).
  CHECK(small.journal_entries <= 10);
  CHECK(big.journal_entries == small.journal_entries);
  // Linear or worse would be 10x or 100x; a generous bound for noise.
  CHECK(big.ms < 3 * small.ms + 50);
}

TEST_CASE("the job queue answers whether it holds a job without a walk, an id held once however often pushed",
          "[jobs][limits]") {
  JobQueue queue;
  queue.push_back("job-0001");
  queue.push_front("job-0002");
  queue.push_back("job-0001");  // pushed again (a retry's push_front may meet an old entry): still once
  CHECK(queue.size() == 2);
  CHECK(queue.Contains("job-0001"));
  CHECK(queue.front() == "job-0002");
  queue.pop_front();
  CHECK_FALSE(queue.Contains("job-0002"));
  CHECK(queue.front() == "job-0001");
  queue.pop_front();
  CHECK_FALSE(queue.Contains("job-0001"));
  CHECK(queue.empty());
}

// With 360,000 jobs in its journal the head could not start: the first
// node to register made it try every waiting job again, and its own agent
// gave up. Restored INFEASIBLE jobs wait by shape; a node registering
// writes nothing for each.
TEST_CASE("a head restored with 50,000 INFEASIBLE jobs takes its first node at once", "[jobs][limits][restart]") {
  QuietLogs quiet;
  Harness h;
  Limit(h, 0, 0);
  SubmitJobRequest request = h.Request(1, 1, PACK, 0, /*gpus=*/1);
  request.mutable_spec()->mutable_array()->set_count(50000);
  REQUIRE(h.head->jobs().Submit(request).ok());
  h.head = std::make_unique<HeadCore>(&h.clock, h.config, &h.store, &h.logs, nullptr);
  REQUIRE(h.head->Restore().ok());
  const size_t before = h.store.entries().size();
  auto t0 = std::chrono::steady_clock::now();
  h.AddNode("a", 2);
  h.head->Tick();
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  CHECK(h.store.entries().size() - before <= 2);
  CHECK(ms < 2000);  // generous: the old path took seconds for this, writing a record per job
  const JobInfo last = h.Job("job-50000");
  INFO(last.reason());
  CHECK(last.state() == INFEASIBLE);
  CHECK(last.reason().find("; 1 schedulable node holds 0 such workers") != std::string::npos);
  // And a GPU node that holds them all: every one of them waits again, in order.
  h.AddNode("g", 2, 1);
  CHECK(h.Job("job-0001").state() == RUNNING);
  CHECK(h.Job("job-50000").state() == PENDING);
}

namespace {

// Milliseconds that `calls` GetStatus take on a head with `waiting` jobs
// of one shape waiting behind a running one.
double StatusCost(int waiting, int calls) {
  QuietLogs quiet;
  Harness h;
  Limit(h, 0, 0);
  h.AddNode("a", 1);
  h.Submit(1, 1, PACK);
  REQUIRE(h.head->jobs().Submit(Array(h, waiting)).ok());
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i) {
    const ClusterStatus status = h.head->GetStatus();
    REQUIRE(status.pending_size() == 1);
    REQUIRE(status.pending(0).more_like_it() == waiting - 1);
  }
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

// `clusterctl status` and the dashboard's poll (every 2 s) walked every
// waiting job to sum them up. The sums are kept as jobs come and go.
TEST_CASE("GetStatus with 20,000 waiting jobs costs what it costs with 2,000", "[jobs][limits][scale]") {
  const double small = StatusCost(2000, 200);
  const double big = StatusCost(20000, 200);
  INFO("200 GetStatus: 2,000 waiting " << small << " ms, 20,000 waiting " << big << " ms");
  CHECK(big < 3 * small + 50);  // a walk would be 10x
}
