#include <catch2/catch.hpp>

#include <string>
#include <tuple>
#include <vector>

#include "common/resources.h"
#include "daemon/head/node_table.h"

using namespace clusterd;

namespace {

RegisterNode Node(const std::string& name, double cpus, int gpus = 0, const std::string& instance = "") {
  RegisterNode r;
  r.set_name(name);
  r.set_name_given(true);
  r.set_address("127.0.0.1");
  r.set_instance_id(instance.empty() ? name + "-instance" : instance);
  (*r.mutable_total()->mutable_amounts())[kCpu] = cpus;
  if (gpus > 0) (*r.mutable_total()->mutable_amounts())[kGpu] = gpus;
  for (int i = 0; i < gpus; ++i) r.add_gpu_indexes(i);
  return r;
}

ResourceSet Req(double cpus, double gpus = 0) {
  ResourceSet r;
  (*r.mutable_amounts())[kCpu] = cpus;
  if (gpus > 0) (*r.mutable_amounts())[kGpu] = gpus;
  return r;
}

constexpr Micros kTimeout = 2'000'000;

}  // namespace

TEST_CASE("a registered node is ALIVE with incarnation 1 and its totals available", "[node_table]") {
  FakeClock clock;
  NodeTable table(&clock, kTimeout);
  auto r = table.Register(Node("w1", 4));
  REQUIRE(r.ok());
  REQUIRE((*r)->state() == ALIVE);
  REQUIRE((*r)->incarnation() == 1);
  REQUIRE(Amount((*r)->available(), kCpu) == 4);
  REQUIRE(table.Find("w1") == *r);
  REQUIRE(table.Find((*r)->node_id()) == *r);
}

TEST_CASE("a silent node dies exactly after node_timeout, not before", "[node_table][liveness]") {
  FakeClock clock;
  NodeTable table(&clock, kTimeout);
  std::vector<std::string> died;
  table.set_on_node_dead([&](const NodeInfo& n) { died.push_back(n.name()); });
  auto id = (*table.Register(Node("w1", 4)))->node_id();

  clock.Advance(kTimeout);  // silent for exactly the timeout: still alive
  REQUIRE(table.CheckTimeouts().empty());
  REQUIRE(table.Find(id)->state() == ALIVE);
  REQUIRE(table.NextDeadline() == clock.NowMicros());

  clock.Advance(1);
  REQUIRE(table.CheckTimeouts() == std::vector<std::string>{id});
  REQUIRE(table.Find(id)->state() == DEAD);
  REQUIRE(table.Find(id)->state_reason() == "no heartbeat for 2000 ms (timeout 2000 ms)");
  REQUIRE(died == std::vector<std::string>{"w1"});
  REQUIRE(table.NextDeadline() == 0);
}

TEST_CASE("heartbeats keep a node alive and move its deadline", "[node_table][liveness]") {
  FakeClock clock;
  NodeTable table(&clock, kTimeout);
  auto id = (*table.Register(Node("w1", 4)))->node_id();
  for (int i = 0; i < 10; ++i) {
    clock.AdvanceMillis(500);
    REQUIRE(table.Heartbeat(id, 1, NodeUsage()).ok());
    REQUIRE(table.CheckTimeouts().empty());
  }
  REQUIRE(table.NextDeadline() == clock.NowMicros() + kTimeout);
  REQUIRE(table.Find(id)->state() == ALIVE);
}

TEST_CASE("a broken stream kills the node at once, a stale incarnation changes nothing", "[node_table][liveness]") {
  FakeClock clock;
  NodeTable table(&clock, kTimeout);
  auto id = (*table.Register(Node("w1", 4)))->node_id();
  table.MarkDisconnected(id, 1, "connection lost");
  REQUIRE(table.Find(id)->state() == DEAD);
  REQUIRE(table.Find(id)->state_reason() == "connection lost");
  REQUIRE(Amount(table.Find(id)->available(), kCpu) == 0);

  // The node comes back: same id, incarnation 2, resources restored.
  auto again = table.Register(Node("w1", 4));
  REQUIRE(again.ok());
  REQUIRE((*again)->node_id() == id);
  REQUIRE((*again)->incarnation() == 2);
  REQUIRE((*again)->state() == ALIVE);
  REQUIRE(Amount((*again)->available(), kCpu) == 4);

  // Events of the old incarnation are ignored.
  table.MarkDisconnected(id, 1, "late news of the old stream");
  REQUIRE(table.Find(id)->state() == ALIVE);
  REQUIRE_FALSE(table.Heartbeat(id, 1, NodeUsage()).ok());
  REQUIRE(table.Heartbeat(id, 2, NodeUsage()).ok());
}

TEST_CASE("a live node's name is not taken by another agent", "[node_table]") {
  FakeClock clock;
  NodeTable table(&clock, kTimeout);
  REQUIRE(table.Register(Node("w1", 4, 0, "a")).ok());
  auto clash = table.Register(Node("w1", 4, 0, "b"));
  REQUIRE(clash.status().code() == Status::Code::kAlreadyExists);
  REQUIRE(clash.status().message() ==
          "node name 'w1' is already used by a live node at 127.0.0.1; pass another --node-name");

  // Without an explicit name the head picks a free one.
  RegisterNode unnamed = Node("w1", 4, 0, "c");
  unnamed.set_name_given(false);
  auto renamed = table.Register(unnamed);
  REQUIRE(renamed.ok());
  REQUIRE((*renamed)->name() == "w1-2");
}

TEST_CASE("allocation takes resources and lowest GPU indexes, release gives them back", "[node_table][resources]") {
  FakeClock clock;
  NodeTable table(&clock, kTimeout);
  auto id = (*table.Register(Node("g", 8, 4)))->node_id();
  std::vector<int> gpus_a, gpus_b, gpus_c;
  REQUIRE(table.TryAllocate(id, Req(2, 2), &gpus_a));
  REQUIRE(gpus_a == std::vector<int>{0, 1});
  REQUIRE(table.TryAllocate(id, Req(2, 1), &gpus_b));
  REQUIRE(gpus_b == std::vector<int>{2});
  REQUIRE_FALSE(table.TryAllocate(id, Req(1, 2), &gpus_c));  // one GPU left
  REQUIRE(Amount(table.Find(id)->available(), kCpu) == 4);
  REQUIRE(Amount(table.Find(id)->available(), kGpu) == 1);

  table.Release(id, 1, Req(2, 2), gpus_a);
  REQUIRE(table.TryAllocate(id, Req(1, 3), &gpus_c));
  REQUIRE(gpus_c == std::vector<int>{0, 1, 3});
  REQUIRE(Amount(table.Find(id)->available(), kCpu) == 5);  // 8 - 2 - 2 + 2 - 1

  // A release for an old incarnation does not inflate the new one.
  table.MarkDisconnected(id, 1, "gone");
  REQUIRE(table.Register(Node("g", 8, 4)).ok());
  table.Release(id, 1, Req(2, 1), gpus_b);
  REQUIRE(Amount(table.Find(id)->available(), kCpu) == 8);
}

TEST_CASE("a draining node takes no new work", "[node_table]") {
  FakeClock clock;
  NodeTable table(&clock, kTimeout);
  auto id = (*table.Register(Node("w1", 4)))->node_id();
  auto drained = table.Drain("w1");
  REQUIRE(drained.ok());
  REQUIRE((*drained)->state() == DRAINING);
  REQUIRE_FALSE(table.IsSchedulable(id));
  std::vector<int> gpus;
  REQUIRE_FALSE(table.TryAllocate(id, Req(1), &gpus));
  REQUIRE(table.Drain("nope").status().code() == Status::Code::kNotFound);
  // Draining nodes are still watched for silence.
  clock.Advance(kTimeout + 1);
  REQUIRE(table.CheckTimeouts().size() == 1);
}

namespace {

// The planning rows as (node name, free CPUs, free GPU indexes).
std::vector<std::tuple<std::string, double, std::vector<int>>> Rows(const std::vector<NodeCapacity>& rows) {
  std::vector<std::tuple<std::string, double, std::vector<int>>> out;
  for (const NodeCapacity& row : rows) {
    std::vector<int> free;
    for (const auto& [gpu, fraction] : row.gpu_free) {
      if (fraction >= 1.0) free.push_back(gpu);
    }
    out.emplace_back(row.name, Amount(row.resources, kCpu), free);
  }
  return out;
}

using R = std::vector<std::tuple<std::string, double, std::vector<int>>>;

}  // namespace

TEST_CASE("the scheduler's rows follow allocations in place and every other change at the next look", "[node_table][resources]") {
  FakeClock clock;
  NodeTable table(&clock, kTimeout);
  auto a = (*table.Register(Node("a", 4, 2)))->node_id();
  REQUIRE(Rows(table.SchedulableNow()) == R{{"a", 4, {0, 1}}});
  const NodeCapacity* before = &table.SchedulableNow()[0];

  // An allocation and a release update the row where it is.
  std::vector<int> gpus;
  REQUIRE(table.TryAllocate(a, Req(3, 1), &gpus));
  REQUIRE(&table.SchedulableNow()[0] == before);
  REQUIRE(Rows(table.SchedulableNow()) == R{{"a", 1, {1}}});
  REQUIRE(Rows(table.SchedulableTotals()) == R{{"a", 4, {0, 1}}});
  table.Release(a, 1, Req(3, 1), gpus);
  REQUIRE(Rows(table.SchedulableNow()) == R{{"a", 4, {0, 1}}});

  // A registration, a drain and a death are in the next rows, in Nodes()' order.
  auto b = (*table.Register(Node("b", 2)))->node_id();
  REQUIRE(Rows(table.SchedulableNow()) == R{{"a", 4, {0, 1}}, {"b", 2, {}}});
  REQUIRE(table.TryAllocate(b, Req(2), &gpus));
  REQUIRE(Rows(table.SchedulableNow()) == R{{"a", 4, {0, 1}}, {"b", 0, {}}});
  REQUIRE(Rows(table.SchedulableTotals()) == R{{"a", 4, {0, 1}}, {"b", 2, {}}});
  REQUIRE(table.Drain("a").ok());
  REQUIRE(Rows(table.SchedulableNow()) == R{{"b", 0, {}}});
  REQUIRE(Rows(table.SchedulableTotals()) == R{{"b", 2, {}}});
  table.MarkDisconnected(b, 1, "gone");
  REQUIRE(table.SchedulableNow().empty());
  REQUIRE(table.SchedulableTotals().empty());
  // Its release after it died changes nothing that is planned on.
  table.Release(b, 1, Req(2), {});
  REQUIRE(table.SchedulableNow().empty());
}

// The head checks a registration itself: a stream may carry anything its
// sender (holding the token) writes (registration_check.h).
TEST_CASE("a registration the head cannot show or count is refused naming what is wrong", "[node_table]") {
  FakeClock clock;
  NodeTable table(&clock, kTimeout);
  auto refused = [&](const RegisterNode& r) {
    auto result = table.Register(r);
    REQUIRE_FALSE(result.ok());
    REQUIRE(result.status().code() == Status::Code::kInvalidArgument);
    return result.status().message();
  };
  RegisterNode forged = Node("evil\n2030-01-01T00:00:00.000Z E node w1: forged", 1);
  CHECK_THAT(refused(forged), Catch::StartsWith("node name: may not contain '/' or control characters"));
  CHECK_THAT(refused(Node("bidi\xE2\x80\xAEtxt.exe", 1)), Catch::StartsWith("node name: may not contain"));
  CHECK_THAT(refused(Node(std::string(4'000'000, 'B'), 1)), Catch::Contains("more than the 128 a name may be"));
  CHECK_THAT(refused(Node("nan", std::nan(""))), Catch::StartsWith("resource CPU: expected a number >= 0"));
  CHECK_THAT(refused(Node("negative", -100)), Catch::StartsWith("resource CPU: expected a number >= 0"));
  RegisterNode gpus = Node("gpus", 1);
  for (int index : {-1, 2147483647, -1}) gpus.add_gpu_indexes(index);
  CHECK(refused(gpus) == "GPU index -1 is negative or given twice");
  RegisterNode labels = Node("labels", 1);
  (*labels.mutable_labels())["zone"] = std::string(300, 'z');
  CHECK(refused(labels) == "label zone is 300 bytes, more than 256");
  RegisterNode address = Node("address", 1);
  address.set_address("10.0.0.1\nforged");
  CHECK_THAT(refused(address), Catch::StartsWith("the node's address may not contain control characters"));
  REQUIRE(table.Nodes().empty());
  REQUIRE(table.Register(Node("fine", 2, 2)).ok());
}
