// The head's side of GPU health: a GPU a heartbeat names with a fault
// leaves the offer until reset, a node with none left drains, and the
// marks outlast heartbeats, agent restarts and head restarts.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "common/resources.h"
#include "daemon/head/gpu_slots.h"
#include "daemon/head/node_table.h"

using namespace clusterd;

namespace {

constexpr Micros kTimeout = 2'000'000;

RegisterNode GpuNode(const std::string& name, int gpus, const std::string& instance = "") {
  RegisterNode r;
  r.set_name(name);
  r.set_name_given(true);
  r.set_address("127.0.0.1");
  r.set_instance_id(instance.empty() ? name + "-instance" : instance);
  (*r.mutable_total()->mutable_amounts())[kCpu] = 8;
  (*r.mutable_total()->mutable_amounts())[kGpu] = gpus;
  for (int i = 0; i < gpus; ++i) r.add_gpu_indexes(i);
  return r;
}

NodeUsage Faults(const std::map<int, std::string>& faults) {
  NodeUsage usage;
  for (const auto& [index, fault] : faults) {
    GpuStatus* gpu = usage.add_gpus();
    gpu->set_index(index);
    gpu->set_fault(fault);
  }
  return usage;
}

ResourceSet Gpus(double n) {
  ResourceSet r;
  (*r.mutable_amounts())[kGpu] = n;
  return r;
}

// The GPUs the scheduler plans on for the node now.
std::map<int, double> Planned(NodeTable& table, const std::string& id) {
  for (const NodeCapacity& row : table.SchedulableNow()) {
    if (row.node_id == id) return row.gpu_free;
  }
  return {};
}

}  // namespace

TEST_CASE("a withheld GPU is offered to nobody, yet what runs on it gives back", "[gpus][gpu_health]") {
  GpuSlots slots({0, 1});
  auto running = slots.Take(1);  // device 0
  REQUIRE(running == std::vector<int>{0});
  slots.Withhold(0);
  slots.Withhold(1);
  CHECK(slots.free().empty());
  CHECK_FALSE(slots.Take(1));
  CHECK(slots.Fit(1, 4) == 0);
  CHECK(slots.WithheldFree() == 1.0);  // device 1 is free, but out
  slots.Give(1, {0});
  CHECK(slots.WithheldFree() == 2.0);
  slots.Offer(0);
  CHECK(slots.free() == std::map<int, double>{{0, 1.0}});
  CHECK(slots.Take(1) == std::vector<int>{0});
}

TEST_CASE("a GPU with a fault leaves the offer, and the node's other GPUs still take work", "[node_table][gpu_health]") {
  FakeClock clock;
  NodeTable table(&clock, kTimeout);
  const NodeInfo* node = *table.Register(GpuNode("g1", 2));
  const std::string id = node->node_id();
  REQUIRE(table.Heartbeat(id, 1, Faults({{0, "2 uncorrectable ECC errors since the driver loaded"}})).ok());
  REQUIRE(node->bad_gpus_size() == 1);
  CHECK(node->bad_gpus(0).index() == 0);
  CHECK(node->bad_gpus(0).fault() == "2 uncorrectable ECC errors since the driver loaded");
  CHECK(node->bad_gpus(0).fault_since_unix_ms() > 0);
  CHECK(node->state() == ALIVE);
  CHECK(Planned(table, id) == std::map<int, double>{{1, 1.0}});

  std::vector<int> gpus;
  REQUIRE(table.TryAllocate(id, Gpus(1), &gpus));
  CHECK(gpus == std::vector<int>{1});  // the other device, never the bad one
  CHECK_FALSE(table.TryAllocate(id, Gpus(1), &gpus));

  // A later heartbeat without the fault does not put it back.
  REQUIRE(table.Heartbeat(id, 1, Faults({})).ok());
  CHECK(node->bad_gpus_size() == 1);
}

TEST_CASE("a node whose every GPU is out is DRAINING, and a reset puts it back", "[node_table][gpu_health]") {
  FakeClock clock;
  NodeTable table(&clock, kTimeout);
  std::vector<NodeRecord> journal;
  table.set_on_node_changed([&](const NodeRecord& record) { journal.push_back(record); });
  const NodeInfo* node = *table.Register(GpuNode("g1", 2));
  const std::string id = node->node_id();
  REQUIRE(table.Heartbeat(id, 1, Faults({{0, "a retired page is pending: the GPU needs a reset"}})).ok());
  REQUIRE(table.Heartbeat(id, 1, Faults({{1, "fallen off the bus: nvidia-smi lists it no more"}})).ok());
  CHECK(node->state() == DRAINING);
  CHECK(node->state_reason().find("every GPU is out of the offer for a fault") == 0);
  CHECK(node->state_reason().find("GPU 1: fallen off the bus") != std::string::npos);
  CHECK_FALSE(table.IsSchedulable(id));
  REQUIRE_FALSE(journal.empty());
  CHECK(journal.back().info().bad_gpus_size() == 2);  // a restarted head knows

  std::string fault;
  auto reset = table.ResetGpu("g1", 1, &fault);
  REQUIRE(reset.ok());
  CHECK(fault == "fallen off the bus: nvidia-smi lists it no more");
  CHECK(node->state() == ALIVE);
  CHECK(node->state_reason() == "GPU 1 reset: back in the offer");
  CHECK(Planned(table, id) == std::map<int, double>{{1, 1.0}});

  auto again = table.ResetGpu("g1", 1, &fault);
  REQUIRE_FALSE(again.ok());
  CHECK(again.status().message() == "GPU 1 of node g1 is not out of the offer (out: 0)");
  CHECK(table.ResetGpu("nobody", 0, &fault).status().message() == "no node named or with id 'nobody'");
}

TEST_CASE("an operator's drain is not undone by a GPU reset", "[node_table][gpu_health]") {
  FakeClock clock;
  NodeTable table(&clock, kTimeout);
  const NodeInfo* node = *table.Register(GpuNode("g1", 1));
  REQUIRE(table.Drain("g1").ok());
  REQUIRE(table.Heartbeat(node->node_id(), 1, Faults({{0, "a row remapping failed"}})).ok());
  std::string fault;
  REQUIRE(table.ResetGpu("g1", 0, &fault).ok());
  CHECK(node->state() == DRAINING);
  CHECK(node->state_reason() == "drain requested");
}

TEST_CASE("bad GPUs stay out when the agent restarts and when the head restarts", "[node_table][gpu_health]") {
  FakeClock clock;
  std::vector<NodeRecord> journal;
  std::string id;
  {
    NodeTable table(&clock, kTimeout);
    table.set_on_node_changed([&](const NodeRecord& record) { journal.push_back(record); });
    id = (*table.Register(GpuNode("g1", 2)))->node_id();
    REQUIRE(table.Heartbeat(id, 1, Faults({{1, "2 uncorrectable ECC errors since the driver loaded"}})).ok());

    // The agent restarts (a new instance, same name): GPU 1 stays out.
    table.MarkDisconnected(id, 1, "agent stopped");
    auto registered = table.Register(GpuNode("g1", 2, "g1-second-instance"));
    REQUIRE(registered.ok());
    const NodeInfo* again = *registered;
    CHECK(again->bad_gpus_size() == 1);
    CHECK(Planned(table, id) == std::map<int, double>{{0, 1.0}});
  }
  // A new head replays the journal; the agent registers again.
  NodeTable table(&clock, kTimeout);
  table.Restore({journal.back()});
  auto registered = table.Register(GpuNode("g1", 2, "g1-second-instance"));
  REQUIRE(registered.ok());
  const NodeInfo* back = *registered;
  REQUIRE(back->bad_gpus_size() == 1);
  CHECK(back->bad_gpus(0).index() == 1);
  CHECK(Planned(table, id) == std::map<int, double>{{0, 1.0}});
}

TEST_CASE("a node with every GPU out stays DRAINING when its agent restarts", "[node_table][gpu_health]") {
  FakeClock clock;
  NodeTable table(&clock, kTimeout);
  const std::string id = (*table.Register(GpuNode("g1", 1)))->node_id();
  REQUIRE(table.Heartbeat(id, 1, Faults({{0, "a row remapping failed"}})).ok());
  table.MarkDisconnected(id, 1, "agent stopped");
  auto registered = table.Register(GpuNode("g1", 1, "g1-second-instance"));
  REQUIRE(registered.ok());
  const NodeInfo* again = *registered;
  CHECK(again->state() == DRAINING);
  CHECK(again->state_reason().find("every GPU is out of the offer") == 0);
}

TEST_CASE("a fault on a GPU the node does not offer is ignored", "[node_table][gpu_health]") {
  FakeClock clock;
  NodeTable table(&clock, kTimeout);
  const NodeInfo* node = *table.Register(GpuNode("g1", 1));
  REQUIRE(table.Heartbeat(node->node_id(), 1, Faults({{5, "a row remapping failed"}})).ok());
  CHECK(node->bad_gpus_size() == 0);
}
