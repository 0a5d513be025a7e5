// Victim choice for preemption (daemon/head/preemption/victim_choice.h):
// which running gangs a blocked job takes, as a pure function of node
// capacities and the running jobs.
#include <catch2/catch.hpp>

#include <deque>
#include <string>
#include <vector>

#include "common/resources.h"
#include "daemon/head/preemption/victim_choice.h"

using namespace clusterd;

namespace {

ResourceSet Cpus(double n) {
  ResourceSet set;
  (*set.mutable_amounts())[kCpu] = n;
  return set;
}

// A node with `free_cpus` CPUs free now.
NodeCapacity Node(const std::string& id, double free_cpus) {
  NodeCapacity node;
  node.node_id = id;
  node.name = id;
  node.resources = ToAmounts(Cpus(free_cpus));
  node.address = "10.0.0.1";
  node.machine = id;
  return node;
}

// What a gang points at (what it asks per worker, its ranks' nodes and
// devices), kept for the test process's life, as a job's spec and slots
// outlive a choice.
template <typename T>
const T* Kept(T value) {
  static std::deque<T> kept;
  return &kept.emplace_back(std::move(value));
}

// A running gang of `ranks` ranks of `cpus` CPUs each on `node`.
RunningGang Gang(const std::string& id, int64_t priority, const std::string& node, int ranks, double cpus) {
  RunningGang gang;
  gang.job_id = id;
  gang.priority = priority;
  gang.per_worker = Kept(Cpus(cpus));
  for (int i = 0; i < ranks; ++i) gang.ranks.push_back({Kept(node), nullptr});
  return gang;
}

GangRequest Ask(int workers, double cpus) {
  GangRequest request;
  request.num_workers = workers;
  request.per_worker = Cpus(cpus);
  return request;
}

}  // namespace

TEST_CASE("victim choice: only strictly lower priority or borrowing gangs, never the unpreemptible",
          "[preemption]") {
  const std::vector<NodeCapacity> full = {Node("a", 0)};
  SECTION("an equal priority is no victim") {
    VictimChoice choice = ChooseVictims(Ask(1, 4), 5, full, {Gang("job-1", 5, "a", 1, 4)});
    CHECK_FALSE(choice.enough);
    CHECK(choice.chosen.empty());
  }
  SECTION("a lower one is") {
    VictimChoice choice = ChooseVictims(Ask(1, 4), 5, full, {Gang("job-1", 4, "a", 1, 4)});
    CHECK(choice.enough);
    CHECK(choice.chosen == std::vector<std::string>{"job-1"});
  }
  SECTION("an equal one that borrows beyond its quota is") {
    RunningGang borrowing = Gang("job-1", 5, "a", 1, 4);
    borrowing.borrowing = true;
    VictimChoice choice = ChooseVictims(Ask(1, 4), 5, full, {borrowing});
    CHECK(choice.chosen == std::vector<std::string>{"job-1"});
  }
  SECTION("preemptible: false is never taken") {
    RunningGang kept = Gang("job-1", 0, "a", 1, 4);
    kept.preemptible = false;
    VictimChoice choice = ChooseVictims(Ask(1, 4), 5, full, {kept});
    CHECK_FALSE(choice.enough);
    CHECK(choice.chosen.empty());
  }
}

TEST_CASE("victim choice: the fewest whole gangs, in order: borrowing, lowest priority, newest checkpoint, youngest",
          "[preemption]") {
  SECTION("one big gang rather than two small ones that would also do") {
    // Node a: two 1-CPU gangs of priority 0; node b: one 4-CPU gang of priority 1.
    const std::vector<NodeCapacity> nodes = {Node("a", 2), Node("b", 0)};
    std::vector<RunningGang> running = {Gang("job-1", 0, "a", 1, 1), Gang("job-2", 0, "a", 1, 1),
                                        Gang("job-3", 1, "b", 1, 4)};
    VictimChoice choice = ChooseVictims(Ask(1, 4), 9, nodes, running);
    CHECK(choice.enough);
    CHECK(choice.chosen == std::vector<std::string>{"job-3"});
  }
  SECTION("the lowest priority first") {
    const std::vector<NodeCapacity> nodes = {Node("a", 0), Node("b", 0)};
    VictimChoice choice =
        ChooseVictims(Ask(1, 4), 9, nodes, {Gang("job-1", 3, "a", 1, 4), Gang("job-2", 1, "b", 1, 4)});
    CHECK(choice.chosen == std::vector<std::string>{"job-2"});
  }
  SECTION("a borrowing gang before any lower priority") {
    const std::vector<NodeCapacity> nodes = {Node("a", 0), Node("b", 0)};
    RunningGang borrowing = Gang("job-1", 3, "a", 1, 4);
    borrowing.borrowing = true;
    VictimChoice choice = ChooseVictims(Ask(1, 4), 9, nodes, {borrowing, Gang("job-2", 1, "b", 1, 4)});
    CHECK(choice.chosen == std::vector<std::string>{"job-1"});
  }
  SECTION("at one priority, the newest stored checkpoint (least work lost), then the youngest") {
    const std::vector<NodeCapacity> nodes = {Node("a", 0), Node("b", 0), Node("c", 0)};
    RunningGang old_checkpoint = Gang("job-1", 1, "a", 1, 4);
    old_checkpoint.newest_checkpoint_unix_ms = 1000;
    old_checkpoint.started_unix_ms = 500;
    RunningGang new_checkpoint = Gang("job-2", 1, "b", 1, 4);
    new_checkpoint.newest_checkpoint_unix_ms = 2000;
    new_checkpoint.started_unix_ms = 100;
    RunningGang none = Gang("job-3", 1, "c", 1, 4);
    none.started_unix_ms = 900;
    CHECK(ChooseVictims(Ask(1, 4), 9, nodes, {old_checkpoint, new_checkpoint, none}).chosen ==
          std::vector<std::string>{"job-2"});
    // Without checkpoints: the one that started last.
    old_checkpoint.newest_checkpoint_unix_ms = new_checkpoint.newest_checkpoint_unix_ms = 0;
    CHECK(ChooseVictims(Ask(1, 4), 9, nodes, {old_checkpoint, new_checkpoint, none}).chosen ==
          std::vector<std::string>{"job-3"});
  }
  SECTION("several gangs when one is not enough, without one that is not needed") {
    // Two ranks of 4 CPUs: node a is full with job-1, node b has 2 CPUs
    // free beside job-2 and job-3 (2 CPUs each). No one gang is enough.
    const std::vector<NodeCapacity> nodes = {Node("a", 0), Node("b", 2)};
    std::vector<RunningGang> running = {Gang("job-1", 0, "a", 1, 4), Gang("job-2", 1, "b", 1, 2),
                                        Gang("job-3", 2, "b", 1, 2)};
    GangRequest request = Ask(2, 4);
    request.placement = SPREAD;
    VictimChoice choice = ChooseVictims(request, 9, nodes, running);
    CHECK(choice.enough);
    // job-1 frees a; b needs 2 more CPUs: job-2 (priority 1) before job-3.
    CHECK(choice.chosen == std::vector<std::string>{"job-1", "job-2"});
  }
  SECTION("nothing when even every eligible gang would not make room") {
    const std::vector<NodeCapacity> nodes = {Node("a", 0)};
    VictimChoice choice = ChooseVictims(Ask(1, 8), 9, nodes, {Gang("job-1", 0, "a", 1, 4)});
    CHECK_FALSE(choice.enough);
    CHECK(choice.chosen.empty());
  }
}

TEST_CASE("victim choice: gangs already being preempted free their room and are not chosen again",
          "[preemption]") {
  const std::vector<NodeCapacity> nodes = {Node("a", 0), Node("b", 0)};
  RunningGang going = Gang("job-1", 0, "a", 1, 4);
  going.being_preempted = true;
  VictimChoice choice = ChooseVictims(Ask(1, 4), 9, nodes, {going, Gang("job-2", 0, "b", 1, 4)});
  CHECK(choice.enough);
  CHECK(choice.chosen.empty());
  CHECK(choice.under_way == std::vector<std::string>{"job-1"});
  // Two such gangs' room is needed: the second one is taken too.
  VictimChoice more = ChooseVictims(Ask(2, 4), 9, nodes, {going, Gang("job-2", 0, "b", 1, 4)});
  CHECK(more.chosen == std::vector<std::string>{"job-2"});
}

TEST_CASE("victim choice: a freed GPU goes back to its device", "[preemption]") {
  NodeCapacity node = Node("a", 8);
  node.resources[kGpu] = 0;
  node.gpu_free = {{0, 0.0}, {1, 0.0}};
  RunningGang gang = Gang("job-1", 0, "a", 1, 1);
  ResourceSet gpu_worker = Cpus(1);
  (*gpu_worker.mutable_amounts())[kGpu] = 1;
  gang.per_worker = &gpu_worker;
  gang.ranks[0].gpus = Kept(std::vector<int>{1});
  GangRequest request = Ask(1, 1);
  (*request.per_worker.mutable_amounts())[kGpu] = 1;
  CHECK(ChooseVictims(request, 9, {node}, {gang}).chosen == std::vector<std::string>{"job-1"});
  (*request.per_worker.mutable_amounts())[kGpu] = 2;  // one device freed is not two
  CHECK_FALSE(ChooseVictims(request, 9, {node}, {gang}).enough);
}
