#include <catch2/catch.hpp>

#include "common/resources.h"
#include "daemon/head/scheduler.h"

using namespace clusterd;

namespace {

NodeCapacity Cap(const std::string& id, double cpus, double gpus = 0) {
  NodeCapacity n;
  n.node_id = id;
  n.name = id;
  n.resources[kCpu] = cpus;
  if (gpus > 0) n.resources[kGpu] = gpus;
  return n;
}

GangRequest Gang(int workers, double cpus, Placement placement, double gpus = 0) {
  GangRequest g;
  g.num_workers = workers;
  (*g.per_worker.mutable_amounts())[kCpu] = cpus;
  if (gpus > 0) (*g.per_worker.mutable_amounts())[kGpu] = gpus;
  g.placement = placement;
  return g;
}

std::vector<std::pair<std::string, int>> Slots(const PlacementPlan& plan) {
  std::vector<std::pair<std::string, int>> out;
  for (const auto& s : plan.slots) out.push_back({s.node_id, s.count});
  return out;
}

using V = std::vector<std::pair<std::string, int>>;

}  // namespace

TEST_CASE("PACK uses the fewest nodes, roomiest first", "[scheduler]") {
  auto plan = PlanGang(Gang(4, 1, PACK), {Cap("a", 2), Cap("b", 4), Cap("c", 1)});
  REQUIRE(Slots(plan) == V{{"b", 4}});
  plan = PlanGang(Gang(5, 1, PACK), {Cap("a", 2), Cap("b", 4), Cap("c", 1)});
  REQUIRE(Slots(plan) == V{{"a", 1}, {"b", 4}});
  // Ties go in node order, also past the few nodes a small gang needs.
  plan = PlanGang(Gang(3, 1, PACK), {Cap("a", 1), Cap("b", 2), Cap("c", 0), Cap("d", 2), Cap("e", 2)});
  REQUIRE(Slots(plan) == V{{"b", 2}, {"d", 1}});
  plan = PlanGang(Gang(2, 1, PACK), {Cap("a", 1), Cap("b", 2), Cap("c", 4)});
  REQUIRE(Slots(plan) == V{{"b", 2}});  // the first that holds the whole gang
  plan = PlanGang(Gang(1, 1, PACK), {Cap("a", 0), Cap("b", 1), Cap("c", 1)});
  REQUIRE(Slots(plan) == V{{"b", 1}});
  REQUIRE(PlanGang(Gang(2, 1, PACK), {Cap("a", 0), Cap("b", 1), Cap("c", 0)}).slots.empty());
}

TEST_CASE("the idle-cluster totals are asked for only when the gang does not fit now", "[scheduler]") {
  std::vector<NodeCapacity> now = {Cap("a", 2)}, totals = {Cap("a", 4)};
  int asked = 0;
  auto count = [&]() -> const std::vector<NodeCapacity>& {
    ++asked;
    return totals;
  };
  REQUIRE(PlaceGang(Gang(2, 1, PACK), now, count).outcome == PlaceOutcome::kPlaced);
  REQUIRE(asked == 0);
  REQUIRE(PlaceGang(Gang(3, 1, PACK), now, count).outcome == PlaceOutcome::kWait);
  REQUIRE(asked == 1);
  REQUIRE(PlaceGang(Gang(5, 1, PACK), now, count).outcome == PlaceOutcome::kInfeasible);
  REQUIRE(asked == 2);
}

TEST_CASE("SPREAD deals ranks round-robin over nodes", "[scheduler]") {
  auto plan = PlanGang(Gang(4, 1, SPREAD), {Cap("a", 4), Cap("b", 4), Cap("c", 1)});
  REQUIRE(Slots(plan) == V{{"a", 2}, {"b", 1}, {"c", 1}});
}

TEST_CASE("STRICT_SPREAD puts at most one rank on a node", "[scheduler]") {
  REQUIRE(Slots(PlanGang(Gang(2, 1, STRICT_SPREAD), {Cap("a", 4), Cap("b", 4)})) == V{{"a", 1}, {"b", 1}});
  REQUIRE(PlanGang(Gang(3, 1, STRICT_SPREAD), {Cap("a", 4), Cap("b", 4)}).slots.empty());
}

TEST_CASE("GPUs are whole and fractional CPUs add up", "[scheduler]") {
  // Half a GPU each: two ranks share a device (as in Ray).
  REQUIRE(WorkersThatFit(Cap("a", 8, 3), Gang(1, 1, PACK, 0.5).per_worker, 10) == 6);
  REQUIRE(WorkersThatFit(Cap("a", 8, 3), Gang(1, 1, PACK, 2).per_worker, 10) == 1);
  REQUIRE(WorkersThatFit(Cap("a", 1), Gang(1, 0.25, PACK).per_worker, 10) == 4);
  REQUIRE(WorkersThatFit(Cap("a", 1), Gang(1, 0, PACK).per_worker, 10) == 10);
  NodeCapacity partly = Cap("a", 8, 2);
  partly.gpu_free = {{0, 0.5}, {1, 0.25}};
  REQUIRE(WorkersThatFit(partly, Gang(1, 1, PACK, 0.25).per_worker, 10) == 3);
  REQUIRE(WorkersThatFit(partly, Gang(1, 1, PACK, 1).per_worker, 10) == 0);
}

TEST_CASE("a gang that fits nowhere now waits, one that never fits is infeasible, with reasons", "[scheduler]") {
  std::vector<NodeCapacity> now = {Cap("a", 1), Cap("b", 0)};
  std::vector<NodeCapacity> totals = {Cap("a", 2), Cap("b", 2)};
  PlaceResult wait = PlaceGang(Gang(3, 1, SPREAD), now, totals);
  REQUIRE(wait.outcome == PlaceOutcome::kWait);
  REQUIRE(wait.reason ==
          "waiting for resources: needs 3 x {1 CPU} (SPREAD); 2 schedulable nodes hold 1 such worker; "
          "e.g. on b: CPU: 1 > 0");

  PlaceResult never = PlaceGang(Gang(2, 1, PACK, 1), now, totals);
  REQUIRE(never.outcome == PlaceOutcome::kInfeasible);
  REQUIRE(never.reason ==
          "cannot fit even on an idle cluster: needs 2 x {1 CPU, 1 GPU} (PACK); 2 schedulable nodes hold 0 such "
          "workers; e.g. on a: GPU: 1 > 0");

  PlaceResult placed = PlaceGang(Gang(1, 1, PACK), now, totals);
  REQUIRE(placed.outcome == PlaceOutcome::kPlaced);
  REQUIRE(Slots(placed.plan) == V{{"a", 1}});
}

TEST_CASE("a gang across machines leaves out nodes with a loopback address, and says so when it cannot fit", "[scheduler]") {
  auto at = [](NodeCapacity n, const std::string& address, const std::string& machine) {
    n.address = address;
    n.machine = machine;
    return n;
  };
  // All on one machine (a local cluster): loopback is fine.
  auto local = PlanGang(Gang(2, 1, STRICT_SPREAD),
                        {at(Cap("a", 1), "127.0.0.1", ""), at(Cap("b", 1), "127.0.0.1", "")});
  REQUIRE(Slots(local) == V{{"a", 1}, {"b", 1}});
  // A loopback node among real machines is passed over when others fit...
  auto mixed = PlanGang(Gang(2, 1, STRICT_SPREAD), {at(Cap("lo", 1), "127.0.0.1", "10.0.0.9"),
                                                    at(Cap("w1", 1), "10.0.0.1", "10.0.0.1"),
                                                    at(Cap("w2", 1), "10.0.0.2", "10.0.0.2")});
  REQUIRE(Slots(mixed) == V{{"w1", 1}, {"w2", 1}});
  // ...and named when they do not: the job waits with the reason.
  std::vector<NodeCapacity> short_of = {at(Cap("lo", 1), "127.0.0.1", "10.0.0.9"),
                                        at(Cap("w1", 1), "10.0.0.1", "10.0.0.1")};
  auto blocked = PlanGang(Gang(2, 1, STRICT_SPREAD), short_of);
  REQUIRE(blocked.slots.empty());
  REQUIRE(blocked.unreachable.find("node lo (127.0.0.1) has a loopback address") != std::string::npos);
  PlaceResult placed = PlaceGang(Gang(2, 1, STRICT_SPREAD), short_of, short_of);
  REQUIRE(placed.outcome == PlaceOutcome::kWait);
  REQUIRE(placed.reason.rfind("waiting: the gang would span machines", 0) == 0);
  // One node, one machine: a loopback address harms nobody.
  REQUIRE(Slots(PlanGang(Gang(1, 1, PACK), short_of)) == V{{"lo", 1}});
}

TEST_CASE("a tiny request does not overflow into infeasible", "[scheduler]") {
  NodeCapacity node = Cap("a", 4);
  node.resources[kMemory] = 1e12;
  GangRequest gang = Gang(2, 1, PACK);
  (*gang.per_worker.mutable_amounts())[kMemory] = 16;  // 16 bytes: 6e10 would fit
  REQUIRE(WorkersThatFit(node, gang.per_worker, 2) == 2);
  REQUIRE(Slots(PlanGang(gang, {node})) == V{{"a", 2}});
}
