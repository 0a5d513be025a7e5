// JobPlacement with the queue policy over a job table, a node table and
// the attempts it starts: jobs start by priority, then fair share among
// users; a job over its quota waits and says so, unless it may borrow; and
// backfill starts a job ahead of a blocked one only where that cannot
// delay it (checked against random workloads on a fake clock).
#include <catch2/catch.hpp>

#include <random>
#include <string>

#include "common/resources.h"
#include "daemon/head/job_adoption.h"
#include "daemon/head/job_attempts.h"
#include "daemon/head/job_placement.h"
#include "job_table_fixture.h"

using namespace clusterd;
using namespace clusterd::testing;

namespace {

constexpr Micros kSecond = 1'000'000;

Config WithBackfill(int jobs) {
  Config config;
  config.backfill_max_jobs = jobs;
  return config;
}

struct QueueFixture : JobConcernsFixture {
  explicit QueueFixture(int backfill_max_jobs = 100) : backfill(backfill_max_jobs) {}
  int backfill;
  JobAdoption adoption{&clock, config, AdoptionParts(), Send(), [] {}};
  JobAttempts attempts{&clock, config, AttemptParts(&adoption), [this] { placement.Schedule(); }};
  QueuePolicy policy{&clock, &table, QueuePolicySettings::FromConfigOrDefaults(WithBackfill(backfill))};
  JobPlacement placement{&table, &nodes, &infeasible, &arrays, &attempts, &policy};

  // A job of `workers` one-CPU ranks, queued as a submit leaves it.
  TrackedJob& Queued(int workers = 1, int priority = 0, const std::string& owner = "", double time_limit_s = 0,
                     bool borrow = false) {
    TrackedJob& job = Add(PENDING, "", workers);
    job.info.set_reason(JobQueue::kReason);
    job.info.mutable_spec()->set_priority(priority);
    job.info.mutable_spec()->set_timeout_s(time_limit_s);
    job.info.mutable_spec()->set_borrow(borrow);
    job.info.set_owner(owner);
    table.queue().push_back(job.info.job_id());
    return job;
  }
  std::string Shown(const TrackedJob& job) const {
    JobInfo shown = job.info;
    placement.ExplainWait(&shown);
    return shown.reason();
  }
  // Every rank of the job's current attempt exits 0.
  void Finish(TrackedJob& job) {
    const std::string id = job.info.job_id();
    const int attempt = CurrentAttempt(job.info).attempt();
    std::vector<RankSlot> slots = job.run.slots;
    for (size_t rank = 0; rank < slots.size(); ++rank) {
      attempts.OnRankExited(slots[rank].node_id, Exit(id, attempt, static_cast<int>(rank), 0));
    }
  }
};

ResourceSet Cpus(double n) {
  ResourceSet set;
  (*set.mutable_amounts())[kCpu] = n;
  return set;
}

}  // namespace

TEST_CASE("a job of higher priority starts before older jobs of lower priority", "[queue_policy][placement]") {
  QueueFixture f;
  const std::string a = f.AddNode("a", 1);
  TrackedJob& running = f.Queued();
  f.placement.Schedule();
  REQUIRE(running.info.state() == RUNNING);
  TrackedJob& low = f.Queued(1, 0);
  TrackedJob& high = f.Queued(1, 10);
  f.placement.Schedule();
  REQUIRE(low.info.state() == PENDING);
  REQUIRE_THAT(f.Shown(low), Catch::StartsWith("queued behind " + high.info.job_id()) &&
                                 Catch::EndsWith("it has priority 10, higher priorities start first"));
  f.Finish(running);
  REQUIRE(high.info.state() == RUNNING);
  REQUIRE(low.info.state() == PENDING);
  f.Finish(high);
  REQUIRE(low.info.state() == RUNNING);
}

TEST_CASE("among users of one priority, the one who used less of their share goes first", "[queue_policy][placement]") {
  QueueFixture f;
  f.AddNode("a", 1);
  // alice ran for an hour; then both queue, alice first.
  TrackedJob& before = f.Queued(1, 0, "alice");
  f.placement.Schedule();
  REQUIRE(before.info.state() == RUNNING);
  f.clock.Advance(3600 * kSecond);
  TrackedJob& alice = f.Queued(1, 0, "alice");
  TrackedJob& bob = f.Queued(1, 0, "bob");
  f.Finish(before);
  REQUIRE(bob.info.state() == RUNNING);
  REQUIRE(alice.info.state() == PENDING);
  // Behind alice's (which waits for the node), carol's new job: carol used
  // nothing, so hers goes before alice's.
  TrackedJob& carol = f.Queued(1, 0, "carol");
  f.placement.Schedule();
  REQUIRE_THAT(f.Shown(alice), Catch::StartsWith("queued behind " + carol.info.job_id()) &&
                                   Catch::EndsWith("carol has used less of their fair share"));
}

TEST_CASE("a job over its group's quota waits and says so, with borrow it runs on idle room and is borrowing",
          "[queue_policy][placement]") {
  QueueFixture f;
  f.AddNode("a", 8);
  f.policy.SetGroups([](const std::string& user) {
    return user == "alice" || user == "carol" ? std::vector<std::string>{"team-a"} : std::vector<std::string>{};
  });
  f.policy.quotas().Set("team-a", Cpus(2));
  TrackedJob& first = f.Queued(2, 0, "alice");
  TrackedJob& over = f.Queued(1, 0, "carol");
  TrackedJob& other = f.Queued(1, 0, "bob");  // behind the one over quota, not held by it
  TrackedJob& borrowing = f.Queued(2, 0, "alice", 0, /*borrow=*/true);
  // The same user as the held one: borrowing, it is not held behind it.
  TrackedJob& carol_borrowing = f.Queued(1, 0, "carol", 0, /*borrow=*/true);
  f.placement.Schedule();
  REQUIRE(first.info.state() == RUNNING);
  REQUIRE(over.info.state() == PENDING);
  REQUIRE(over.info.reason() == JobQueue::kReason);  // shown, not journalled
  REQUIRE_THAT(f.Shown(over), Catch::StartsWith("team-a uses 2 of 2 CPUs"));
  REQUIRE(other.info.state() == RUNNING);
  REQUIRE(borrowing.info.state() == RUNNING);
  REQUIRE(f.placement.IsBorrowing(borrowing));
  REQUIRE(carol_borrowing.info.state() == RUNNING);
  REQUIRE(f.placement.IsBorrowing(carol_borrowing));
  REQUIRE_FALSE(f.placement.IsBorrowing(first));
  REQUIRE_FALSE(f.placement.IsBorrowing(other));
  // Their quota's room back: the one that waited starts.
  f.Finish(first);
  f.Finish(borrowing);
  REQUIRE(over.info.state() == RUNNING);
}

TEST_CASE("a quota raised lets what waited for it start", "[queue_policy][placement]") {
  QueueFixture f;
  f.AddNode("a", 8);
  f.policy.quotas().Set("alice", Cpus(1));
  TrackedJob& job = f.Queued(2, 0, "alice");
  f.placement.Schedule();
  REQUIRE(job.info.state() == PENDING);
  REQUIRE_THAT(f.Shown(job), Catch::StartsWith("alice uses 0 of 1 CPUs and the job asks 2 more"));
  f.policy.quotas().Set("alice", Cpus(4));
  f.placement.Schedule();
  REQUIRE(job.info.state() == RUNNING);
}

TEST_CASE("backfill: a job that ends before the blocked one could start, or runs beside its nodes, goes first",
          "[queue_policy][placement]") {
  QueueFixture f;
  const std::string a = f.AddNode("a", 2, 1);
  const std::string b = f.AddNode("b", 2, 2);
  TrackedJob& running = f.Queued(1, 0, "", /*time_limit_s=*/100);  // on a, until 100 s at the latest
  TrackedJob& other = f.Queued(2);                                  // fills b, no limit
  f.placement.Schedule();
  REQUIRE(running.info.state() == RUNNING);
  REQUIRE(other.info.state() == RUNNING);
  TrackedJob& gang = f.Queued(2);  // needs a whole node: a's, at 100 s
  TrackedJob& too_long = f.Queued(1, 0, "", 200);
  TrackedJob& forever = f.Queued(1);
  TrackedJob& short_one = f.Queued(1, 0, "", 50);
  f.placement.Schedule();
  REQUIRE(gang.info.state() == PENDING);
  REQUIRE(too_long.info.state() == PENDING);  // would hold a past 100 s
  REQUIRE(forever.info.state() == PENDING);
  REQUIRE(short_one.info.state() == RUNNING);  // ends by 50 s: before the gang could start
  const QueueListReply queue = f.placement.ListQueue(0);
  REQUIRE(queue.jobs_size() == 3);
  REQUIRE(queue.jobs(0).job_id() == gang.info.job_id());
  REQUIRE(queue.jobs(0).estimated_start_unix_ms() == f.clock.UnixMillis() + 100'000);
  REQUIRE(queue.jobs(1).estimated_start_unix_ms() == 0);

  // b frees up: the gang cannot start there either way, but a job without
  // a limit may now run beside the gang's reserved node.
  f.Finish(other);
  REQUIRE(gang.info.state() == RUNNING);  // b holds it whole now
}

TEST_CASE("the queue estimates each waiting job's start from the time limits of those that run or start before it",
          "[queue_policy][placement]") {
  QueueFixture f;
  f.AddNode("a", 2);
  TrackedJob& running = f.Queued(2, 0, "", /*time_limit_s=*/100);
  f.placement.Schedule();
  REQUIRE(running.info.state() == RUNNING);
  f.Queued(2, 0, "", 50);  // at 100 s, when the running job's limit ends it, until 150 s
  f.Queued(1, 0, "", 30);  // at 150 s, until 180 s
  f.Queued(2);             // at 180 s, and never ends
  f.Queued(1);             // so this one's start is unknown
  f.placement.Schedule();
  const QueueListReply queue = f.placement.ListQueue(0);
  REQUIRE(queue.jobs_size() == 4);
  const int64_t now_ms = f.clock.UnixMillis();
  CHECK(queue.jobs(0).estimated_start_unix_ms() == now_ms + 100'000);
  CHECK(queue.jobs(1).estimated_start_unix_ms() == now_ms + 150'000);
  CHECK(queue.jobs(2).estimated_start_unix_ms() == now_ms + 180'000);
  CHECK(queue.jobs(3).estimated_start_unix_ms() == 0);
}

TEST_CASE("with backfill_max_jobs 0 nothing passes a blocked job", "[queue_policy][placement]") {
  QueueFixture f(/*backfill_max_jobs=*/0);
  f.AddNode("a", 2);
  TrackedJob& running = f.Queued(1, 0, "", 100);
  f.placement.Schedule();
  REQUIRE(running.info.state() == RUNNING);
  TrackedJob& gang = f.Queued(2);
  TrackedJob& short_one = f.Queued(1, 0, "", 10);
  f.placement.Schedule();
  REQUIRE(gang.info.state() == PENDING);
  REQUIRE(short_one.info.state() == PENDING);
  REQUIRE_THAT(f.Shown(short_one), Catch::StartsWith("queued behind " + gang.info.job_id()) &&
                                       Catch::EndsWith("jobs start in the order they came"));
}

// Random workloads: every job ends at some time within its limit; the
// first job that must wait starts no later than its reservation said,
// however many jobs were started ahead of it.
TEST_CASE("backfill never delays the reserved job: random workloads on a fake clock", "[queue_policy][placement]") {
  std::mt19937 random(42);
  for (int round = 0; round < 200; ++round) {
    INFO("round " << round);
    QueueFixture f;
    const int node_count = 1 + static_cast<int>(random() % 4);
    for (int n = 0; n < node_count; ++n) f.AddNode("n" + std::to_string(n), 4, n + 1);
    std::uniform_int_distribution<int> limit_s(1, 100);
    std::map<std::string, Micros> ends;  // each started job's end, within its limit
    // In whole milliseconds, as the estimated start is given.
    auto started = [&](TrackedJob& job) {
      if (job.info.state() != RUNNING || ends.count(job.info.job_id())) return;
      const double limit = job.info.spec().timeout_s() > 0 ? job.info.spec().timeout_s() : 1000;
      std::uniform_int_distribution<Micros> run_ms(1, static_cast<Micros>(limit * 1000));
      ends[job.info.job_id()] = f.clock.NowMicros() + run_ms(random) * 1000;
    };
    // Jobs that fill part of the cluster (each fits a node of its own), each with a limit.
    std::vector<TrackedJob*> jobs;
    for (int i = 0; i < node_count; ++i) jobs.push_back(&f.Queued(1 + random() % 3, 0, "", limit_s(random)));
    f.placement.Schedule();
    for (TrackedJob* job : jobs) REQUIRE(job->info.state() == RUNNING);
    // The gang: the whole cluster's CPUs, so that it must wait.
    TrackedJob& gang = f.Queued(node_count * 4, 0, "", limit_s(random));
    // Behind it: jobs of every size, with and without limits.
    for (int i = 0; i < 20; ++i) {
      const bool limited = random() % 4 != 0;
      jobs.push_back(&f.Queued(1 + random() % 4, 0, "", limited ? limit_s(random) : 0));
    }
    f.placement.Schedule();
    for (TrackedJob* job : jobs) started(*job);
    REQUIRE(gang.info.state() == PENDING);
    const QueueListReply queue = f.placement.ListQueue(1);
    REQUIRE(queue.jobs(0).job_id() == gang.info.job_id());
    const int64_t promised_ms = queue.jobs(0).estimated_start_unix_ms();
    REQUIRE(promised_ms > 0);  // every running job has a limit
    while (gang.info.state() != RUNNING) {
      REQUIRE_FALSE(ends.empty());
      auto next = std::min_element(ends.begin(), ends.end(),
                                   [](const auto& x, const auto& y) { return x.second < y.second; });
      const std::string id = next->first;
      f.clock.Advance(std::max<Micros>(0, next->second - f.clock.NowMicros()));
      ends.erase(next);
      f.Finish(*f.table.Find(id));
      for (TrackedJob* job : jobs) started(*job);
      REQUIRE(f.clock.UnixMillis() <= promised_ms);
    }
    REQUIRE(f.clock.UnixMillis() <= promised_ms);
  }
}

// A job queued behind the waiting one is tried alone (no walk of the
// queue again): it still backfills, and still waits for its quota; one
// queued ahead of it (a higher priority) takes the first place.
TEST_CASE("jobs queued behind a waiting one are tried as they come, and one of higher priority goes before it",
          "[queue_policy][placement]") {
  QueueFixture f;
  f.AddNode("a", 2);
  TrackedJob& running = f.Queued(1, 0, "", 100);
  f.placement.Schedule();
  TrackedJob& gang = f.Queued(2);
  f.placement.Schedule();
  REQUIRE(gang.info.state() == PENDING);
  TrackedJob& short_one = f.Queued(1, 0, "", 10);
  f.placement.Schedule();
  REQUIRE(short_one.info.state() == RUNNING);
  f.Finish(short_one);
  f.policy.quotas().Set("admin", Cpus(1));
  f.placement.Schedule();
  TrackedJob& over = f.Queued(1, 0, "", 10);  // admin (no owner) uses 1 of 1 CPU
  f.placement.Schedule();
  REQUIRE(over.info.state() == PENDING);
  REQUIRE_THAT(f.Shown(over), Catch::StartsWith("admin uses 1 of 1 CPUs"));
  f.policy.quotas().Remove("admin");
  TrackedJob& urgent = f.Queued(2, 5);
  f.placement.Schedule();
  REQUIRE_THAT(f.Shown(gang), Catch::StartsWith("queued behind " + urgent.info.job_id()));
  // Its quota gone, the held job ends (by its limit) before urgent's
  // reservation starts: it runs beside it meanwhile.
  REQUIRE(over.info.state() == RUNNING);
  f.Finish(running);
  f.Finish(over);
  REQUIRE(urgent.info.state() == RUNNING);
  REQUIRE(gang.info.state() == PENDING);
}
