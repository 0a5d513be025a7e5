// Resources on the nodes, alone over a hand-made roster: only nodes that
// take work give resources, a release of an older incarnation gives
// nothing back, and the planning rows follow allocations in place.
#include <catch2/catch.hpp>

#include <vector>

#include "common/resources.h"
#include "daemon/head/node_allocations.h"

using namespace clusterd;

namespace {

ResourceSet Cpus(double cpus) {
  ResourceSet set;
  (*set.mutable_amounts())[kCpu] = cpus;
  return set;
}

NodeRoster::Entry& Add(NodeRoster& roster, const std::string& name, double cpus) {
  NodeRoster::Entry& entry = roster.AddNew(name);
  entry.info.set_name(name);
  entry.info.set_state(ALIVE);
  entry.info.set_incarnation(1);
  *entry.info.mutable_total() = Cpus(cpus);
  *entry.info.mutable_available() = Cpus(cpus);
  roster.Changed();
  return entry;
}

}  // namespace

TEST_CASE("allocations take from nodes that take work and a stale release gives nothing back",
          "[node_table][node_allocations]") {
  NodeRoster roster;
  NodeAllocations allocations(&roster);
  NodeRoster::Entry& w1 = Add(roster, "w1", 4);
  std::vector<int> gpus;
  REQUIRE(allocations.TryAllocate("w1", Cpus(3), &gpus));
  CHECK_FALSE(allocations.TryAllocate("w1", Cpus(2), &gpus));  // 1 left
  CHECK(Amount(w1.info.available(), kCpu) == 1);

  allocations.Release("w1", /*incarnation=*/0, Cpus(3), {});  // an older incarnation's
  CHECK(Amount(w1.info.available(), kCpu) == 1);
  allocations.Release("w1", 1, Cpus(3), {});
  allocations.Release("w1", 1, Cpus(3), {});  // twice: never more than the node has
  CHECK(Amount(w1.info.available(), kCpu) == 4);

  w1.restored = true;  // put back after a head restart, its agent not yet back
  CHECK_FALSE(allocations.TryAllocate("w1", Cpus(1), &gpus));
  CHECK_FALSE(allocations.TryAllocate("nobody", Cpus(1), &gpus));
}

TEST_CASE("the planning rows change in place with an allocation and are rebuilt after any other change",
          "[node_table][node_allocations]") {
  NodeRoster roster;
  NodeAllocations allocations(&roster);
  Add(roster, "w1", 4);
  NodeRoster::Entry& w2 = Add(roster, "w2", 2);
  const std::vector<NodeCapacity>* now = &allocations.SchedulableNow();
  REQUIRE(now->size() == 2);
  REQUIRE(allocations.SchedulableTotals().size() == 2);
  std::vector<int> gpus;
  REQUIRE(allocations.TryAllocate("w2", Cpus(2), &gpus));
  CHECK(&allocations.SchedulableNow() == now);
  CHECK(Amount((*now)[1].resources, kCpu) == 0);
  CHECK(Amount(allocations.SchedulableTotals()[1].resources, kCpu) == 2);  // totals do not move

  w2.restored = true;  // takes no work now, but a job may wait for it
  roster.Changed();
  CHECK(allocations.SchedulableNow().size() == 1);
  CHECK(allocations.SchedulableTotals().size() == 2);
}
