// The queue policy's parts on their own, on a fake clock: priority
// classes, fair share's decaying usage, quotas, the queue's order
// (priority, then fair share among users, then age) and backfill's
// reservation.
#include <catch2/catch.hpp>

#include <cmath>
#include <deque>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/resources.h"
#include "daemon/head/job_queue.h"
#include "daemon/head/queue_policy/fair_share.h"
#include "daemon/head/queue_policy/priority_classes.h"
#include "daemon/head/queue_policy/queue_policy.h"
#include "daemon/head/queue_policy/quotas.h"
#include "daemon/head/queue_policy/reservation.h"

using namespace clusterd;

namespace {

constexpr Micros kSecond = 1'000'000;

ResourceSet Amounts(double gpus, double cpus) {
  ResourceSet set;
  if (gpus > 0) (*set.mutable_amounts())[kGpu] = gpus;
  if (cpus > 0) (*set.mutable_amounts())[kCpu] = cpus;
  return set;
}

NodeCapacity Node(const std::string& id, double cpus) {
  NodeCapacity node;
  node.node_id = id;
  node.name = id;
  node.address = "10.0.0.1";
  node.resources[kCpu] = cpus;
  return node;
}

// A queue over fixed keys: id -> (priority, user, seq).
struct KeyedQueue {
  std::map<std::string, QueueKey> keys;
  std::map<std::string, FairShareStanding> standings;
  JobQueue queue{[this](const std::string& id) -> std::optional<QueueKey> {
    auto it = keys.find(id);
    if (it == keys.end()) return std::nullopt;
    return it->second;
  }};
  KeyedQueue() {
    queue.SetFairShare([this](const std::string& user) { return standings[user]; },
                       [](const std::string&) { return std::pair<double, double>{1, 0}; });
  }
  void Push(const std::string& id, int priority, const std::string& user, uint64_t seq) {
    keys[id] = {priority, user, seq};
    queue.push_back(id);
  }
  std::vector<std::string> Order() {
    std::vector<std::string> out;
    JobQueue::Walk walk = queue.InOrder();
    while (const std::string* id = walk.Next()) out.push_back(*id);
    return out;
  }
};

}  // namespace

TEST_CASE("priority classes: NAME=N pairs, and a class the head lacks is refused naming the known ones",
          "[queue_policy]") {
  auto classes = PriorityClasses::Parse("high=100,low=-10");
  REQUIRE(classes.ok());
  REQUIRE(*classes->Resolve("high") == 100);
  REQUIRE(*classes->Resolve("low") == -10);
  auto unknown = classes->Resolve("urgent");
  REQUIRE_FALSE(unknown.ok());
  REQUIRE_THAT(unknown.status().message(), Catch::Contains("no priority class 'urgent'") &&
                                               Catch::Contains("high (100), low (-10)"));
  REQUIRE(PriorityClasses::Parse("").ok());
  REQUIRE_THAT(PriorityClasses::Parse("high").status().message(), Catch::Contains("'high' is not NAME=N"));
  REQUIRE_THAT(PriorityClasses::Parse("high=x").status().message(), Catch::Contains("is not a whole number"));
  REQUIRE_THAT(PriorityClasses::Parse("a=1,a=2").status().message(), Catch::Contains("a is defined twice"));
}

TEST_CASE("fair share: usage accumulates while jobs run and halves every half-life once they stop",
          "[queue_policy]") {
  FakeClock clock;
  const Micros half_life = 100 * kSecond;
  FairShare share(&clock, half_life);
  share.Charge("alice", 2, 8, 1);  // 2 GPUs, 8 CPUs
  clock.Advance(10 * kSecond);
  // Ten seconds of 2 GPUs, a little less for the decay within them.
  const double after_run = share.StandingOf("alice").gpu_seconds;
  const double mean_life = 100 / std::log(2.0);
  REQUIRE(after_run == Approx(2 * mean_life * (1 - std::exp2(-0.1))));
  REQUIRE(after_run < 20);
  REQUIRE(after_run > 19);
  REQUIRE(share.StandingOf("alice").gpus_now == 2);
  share.Charge("alice", 2, 8, -1);
  clock.Advance(half_life);
  REQUIRE(share.StandingOf("alice").gpu_seconds == Approx(after_run / 2));
  clock.Advance(half_life);
  REQUIRE(share.StandingOf("alice").gpu_seconds == Approx(after_run / 4));
  REQUIRE(share.StandingOf("alice").cpu_seconds == Approx(4 * after_run / 4));
  // Reading does not change it: the same time read twice gives the same.
  REQUIRE(share.StandingOf("alice").gpu_seconds == share.StandingOf("alice").gpu_seconds);
  // Someone who never ran stands first.
  REQUIRE(share.StandingOf("bob") < share.StandingOf("alice"));
}

TEST_CASE("fair share: with no half-life only what runs now counts", "[queue_policy]") {
  FakeClock clock;
  FairShare share(&clock, 0);
  share.Charge("alice", 1, 0, 1);
  clock.Advance(1000 * kSecond);
  REQUIRE(share.StandingOf("alice").gpu_seconds == 0);
  REQUIRE(share.StandingOf("alice").gpus_now == 1);
}

TEST_CASE("quotas: a user's and a group's use is held to their limits, and the reason says whose",
          "[queue_policy]") {
  Quotas quotas;
  quotas.Set("team-a", Amounts(8, 64));
  const std::vector<std::string> alice = {"alice", "team-a"};
  REQUIRE_FALSE(quotas.WouldPass(alice, Amounts(8, 8)));
  quotas.Charge(alice, Amounts(8, 8), 1);
  auto over = quotas.WouldPass(alice, Amounts(1, 1));
  REQUIRE(over);
  REQUIRE(*over == "team-a uses 8 of 8 GPUs");
  REQUIRE_FALSE(quotas.WouldPass(alice, Amounts(0, 56)));  // CPUs left
  REQUIRE(*quotas.WouldPass(alice, Amounts(0, 57)) == "team-a uses 8 of 64 CPUs and the job asks 57 more");
  // A user of another group is not held by team-a's quota.
  REQUIRE_FALSE(quotas.WouldPass({"bob", "team-b"}, Amounts(8, 8)));
  quotas.Charge(alice, Amounts(8, 8), -1);
  REQUIRE_FALSE(quotas.WouldPass(alice, Amounts(8, 8)));
  const std::vector<QuotaInfo> listed = quotas.List();
  REQUIRE(listed.size() == 1);
  REQUIRE(listed[0].name() == "team-a");
  REQUIRE(Amount(listed[0].limit(), kGpu) == 8);
  REQUIRE(quotas.Remove("team-a"));
  REQUIRE_FALSE(quotas.Remove("team-a"));
}

TEST_CASE("the queue orders by priority, then by users' fair share, then by age", "[queue_policy]") {
  KeyedQueue q;
  q.Push("old-low", 0, "alice", 1);
  q.Push("new-high", 10, "alice", 5);
  q.Push("bob-1", 0, "bob", 2);
  q.Push("alice-2", 0, "alice", 3);
  q.Push("bob-2", 0, "bob", 4);
  // Nobody used anything: ties go to the older front job, and each job
  // started counts for its user (alice's first, then bob's, in turn).
  REQUIRE(q.queue.front() == "new-high");
  REQUIRE(q.Order() == std::vector<std::string>{"new-high", "old-low", "bob-1", "alice-2", "bob-2"});
  // alice used more of her share: bob's jobs go first within priority 0.
  q.standings["alice"].gpu_seconds = 100;
  q.queue.StandingsChanged();
  REQUIRE(q.Order() == std::vector<std::string>{"new-high", "bob-1", "bob-2", "old-low", "alice-2"});
  q.queue.pop_front();
  REQUIRE(q.queue.front() == "bob-1");
  // A requeued job keeps its age: it goes back before bob's newer one.
  q.queue.pop_front();
  q.Push("bob-1", 0, "bob", 2);
  REQUIRE(q.queue.front() == "bob-1");
  REQUIRE(q.queue.Contains("bob-1"));
  q.queue.Remove("bob-1");
  REQUIRE_FALSE(q.queue.Contains("bob-1"));
  REQUIRE(q.queue.size() == 3);
}

TEST_CASE("with one user and one priority the queue is first come, first served", "[queue_policy]") {
  KeyedQueue q;
  for (uint64_t seq : {3, 1, 2}) q.Push("job-" + std::to_string(seq), 0, "", seq);
  q.queue.push_front("job-1");  // pushed again: still once, in its place
  REQUIRE(q.queue.size() == 3);
  REQUIRE(q.Order() == std::vector<std::string>{"job-1", "job-2", "job-3"});
}

TEST_CASE("a walk of the queue ends once the queue changes under it", "[queue_policy]") {
  KeyedQueue q;
  q.Push("a", 0, "", 1);
  q.Push("b", 0, "", 2);
  JobQueue::Walk walk = q.queue.InOrder();
  REQUIRE(*walk.Next() == "a");
  q.Push("c", 0, "", 3);
  REQUIRE(walk.Next() == nullptr);
}

TEST_CASE("skipping the rest of a user's jobs passes over them, not over other users'", "[queue_policy]") {
  KeyedQueue q;
  q.Push("a1", 0, "alice", 1);
  q.Push("a2", 0, "alice", 2);
  q.Push("b1", 0, "bob", 3);
  JobQueue::Walk walk = q.queue.InOrder();
  REQUIRE(*walk.Next() == "a1");
  walk.SkipRestOfUser();
  REQUIRE(*walk.Next() == "b1");
  REQUIRE(walk.Next() == nullptr);
}

TEST_CASE("a reservation starts when the fewest running jobs have ended, on the nodes that frees", "[queue_policy]") {
  // Two nodes of 4 CPUs, each full: a ends at 10 s, b at 20 s.
  std::vector<NodeCapacity> now = {Node("a", 0), Node("b", 0)};
  ResourceSet one_cpu;
  (*one_cpu.mutable_amounts())[kCpu] = 1;
  std::deque<std::vector<RankSlot>> slots;  // each hold's, in place while the test runs
  auto hold = [&](const std::string& node, Micros ends, int ranks) {
    RunningHold h;
    h.ends_at = ends;
    h.per_worker = &one_cpu;
    std::vector<RankSlot>& held = slots.emplace_back();
    for (int i = 0; i < ranks; ++i) held.push_back({node, 1, {}, true});
    h.slots = &held;
    return h;
  };
  GangRequest four;
  four.num_workers = 4;
  (*four.per_worker.mutable_amounts())[kCpu] = 1;
  Reservation r = Reserve(four, now, {hold("b", 20 * kSecond, 4), hold("a", 10 * kSecond, 4)});
  REQUIRE(r.known);
  REQUIRE(r.starts_at == 10 * kSecond);
  REQUIRE(r.nodes == std::set<std::string>{"a"});

  GangRequest eight = four;
  eight.num_workers = 8;
  r = Reserve(eight, now, {hold("b", 20 * kSecond, 4), hold("a", 10 * kSecond, 4)});
  REQUIRE(r.starts_at == 20 * kSecond);
  REQUIRE(r.nodes == std::set<std::string>{"a", "b"});

  // Held by a job without a time limit: where is known, not when.
  r = Reserve(four, now, {hold("a", kForever, 4), hold("b", kForever, 4)});
  REQUIRE(r.known);
  REQUIRE(r.starts_at == kForever);
  REQUIRE(r.nodes.size() == 1);

  // More than the nodes hold even when all have ended: nothing is known.
  GangRequest nine = four;
  nine.num_workers = 9;
  REQUIRE_FALSE(Reserve(nine, now, {hold("a", 1, 4), hold("b", 2, 4)}).known);
}

TEST_CASE("at submit a class becomes its number, and a priority above the owner's maximum is refused naming it",
          "[queue_policy]") {
  FakeClock clock;
  Config config;
  config.priority_class = "high=100";
  MemoryJobStore store;
  JobTable table(&clock, config, &store);
  QueuePolicy policy(&clock, &table, *QueuePolicySettings::FromConfig(config));
  policy.SetMaxPriority([](const std::string& user) -> std::optional<int> {
    if (user == "bob") return 50;
    return std::nullopt;  // an admin, or a user without a cap
  });
  JobSpec spec;
  spec.set_priority_class("high");
  REQUIRE(policy.AdmitPriority("alice", &spec).ok());
  REQUIRE(spec.priority() == 100);
  const Status refused = policy.AdmitPriority("bob", &spec);
  REQUIRE_FALSE(refused.ok());
  REQUIRE_THAT(refused.message(), Catch::StartsWith("priority 100 is above bob's maximum 50"));
  spec.set_priority_class("");
  spec.set_priority(50);
  REQUIRE(policy.AdmitPriority("bob", &spec).ok());
  spec.set_priority_class("urgent");
  REQUIRE_THAT(policy.AdmitPriority("alice", &spec).message(), Catch::Contains("no priority class 'urgent'"));
  Config bad;
  bad.priority_class = "high";
  REQUIRE_THAT(QueuePolicySettings::FromConfig(bad).status().message(), Catch::Contains("priority_class"));
}
