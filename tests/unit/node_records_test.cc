// The node table across a head restart: what NodeJournal keeps of it and
// what NodeTable::Restore makes of that.
#include <catch2/catch.hpp>

#include <memory>
#include <string>

#include "common/resources.h"
#include "daemon/head/head_core.h"
#include "daemon/head/job_store.h"
#include "head_harness.h"
#include "daemon/head/node_journal.h"
#include "daemon/head/node_table.h"

using namespace clusterd;

namespace {

constexpr Micros kTimeout = 2'000'000;

RegisterNode Agent(const std::string& name, const std::string& instance, bool name_given = true) {
  RegisterNode r;
  r.set_name(name);
  r.set_name_given(name_given);
  r.set_address("10.0.0.1");
  r.set_instance_id(instance);
  (*r.mutable_total()->mutable_amounts())[kCpu] = 4;
  return r;
}

ResourceSet OneCpu() {
  ResourceSet r;
  (*r.mutable_amounts())[kCpu] = 1;
  return r;
}

// A head's node table journalled into `store`, as HeadCore wires them.
struct Head {
  Head(FakeClock* clock, JobStore* store)
      : table(clock, kTimeout), journal(clock, store, [this] { return table.Records(); }) {
    auto records = journal.Load();
    REQUIRE(records.ok());
    table.Restore(*records);
    table.set_on_node_changed([this](const NodeRecord& record) { journal.Record(record); });
  }
  std::string IdOf(const std::string& name) const { return table.Find(name)->node_id(); }

  NodeTable table;
  NodeJournal journal;
};

}  // namespace

TEST_CASE("a restarted head gives each agent its node id back whatever order they return in", "[node_table][journal]") {
  FakeClock clock;
  MemoryJobStore store;
  std::string w1, w2, w3;
  {
    Head before(&clock, &store);
    for (const char* name : {"w1", "w2", "w3"}) REQUIRE(before.table.Register(Agent(name, std::string(name) + "-a")).ok());
    w1 = before.IdOf("w1"), w2 = before.IdOf("w2"), w3 = before.IdOf("w3");
    REQUIRE(before.table.Drain("w3", "maintenance").ok());
    before.table.MarkDisconnected(w2, 1, "stream closed");
  }
  clock.Advance(3'600'000'000);  // the head was down an hour after they registered
  Head after(&clock, &store);
  // A restored node's last heartbeat is the restart's time, not its
  // registration's: else the age shown counts the hour the head was down.
  REQUIRE(after.table.Find(w1)->last_heartbeat_unix_ms() == clock.UnixMillis());
  // Before any agent is back: the dead one is listed DEAD, the others keep
  // their state but take no work.
  REQUIRE(after.table.Find(w2)->state() == DEAD);
  REQUIRE(after.table.Find(w2)->state_reason() == "stream closed");
  REQUIRE(after.table.Find(w1)->state() == ALIVE);
  REQUIRE(after.table.Find(w1)->state_reason().rfind("not heard from since the head restarted", 0) == 0);
  REQUIRE_FALSE(after.table.IsSchedulable(w1));
  std::vector<int> gpus;
  REQUIRE_FALSE(after.table.TryAllocate(w1, OneCpu(), &gpus));
  REQUIRE(after.table.SchedulableNow().empty());
  // But a job that fits it waits for it: it is not infeasible meanwhile.
  REQUIRE(after.table.SchedulableTotals().size() == 1);
  REQUIRE(after.table.SchedulableTotals()[0].node_id == w1);

  // The last one registered comes back first: it gets its own id, not the first free one.
  auto back3 = after.table.Register(Agent("w3", "w3-a"));
  REQUIRE(back3.ok());
  REQUIRE((*back3)->node_id() == w3);
  REQUIRE((*back3)->state() == DRAINING);
  REQUIRE((*back3)->state_reason() == "registered again (incarnation 2), still draining: maintenance");
  auto back1 = after.table.Register(Agent("w1", "w1-a"));
  REQUIRE((*back1)->node_id() == w1);
  REQUIRE((*back1)->state() == ALIVE);
  REQUIRE(after.table.IsSchedulable(w1));
  // A node new to the cluster takes a number no earlier node had.
  auto w4 = after.table.Register(Agent("w4", "w4-a"));
  REQUIRE((*w4)->node_id() == "node-0004");
}

TEST_CASE("a drained agent that reconnects stays draining and the same name from a new agent process takes work",
          "[node_table]") {
  FakeClock clock;
  NodeTable table(&clock, kTimeout);
  const std::string id = (*table.Register(Agent("w1", "first")))->node_id();
  REQUIRE(table.Drain("w1", "drain requested").ok());
  // Its stream broke and it came back (the same process): still drained.
  table.MarkDisconnected(id, 1, "stream closed");
  auto again = table.Register(Agent("w1", "first"));
  REQUIRE((*again)->state() == DRAINING);
  REQUIRE_FALSE(table.IsSchedulable(id));
  // clusterd stop, then start on that machine: a new agent, ready for work.
  table.MarkDisconnected(id, 2, "stream closed");
  auto restarted = table.Register(Agent("w1", "second"));
  REQUIRE((*restarted)->node_id() == id);
  REQUIRE((*restarted)->state() == ALIVE);
  REQUIRE(table.IsSchedulable(id));
}

TEST_CASE("a node put back after a head restart whose agent does not return is DEAD after the node timeout",
          "[node_table][journal][liveness]") {
  FakeClock clock;
  MemoryJobStore store;
  std::string id;
  {
    Head before(&clock, &store);
    id = (*before.table.Register(Agent("w1", "w1-a")))->node_id();
  }
  clock.Advance(60'000'000);  // the head was away a minute
  Head after(&clock, &store);
  REQUIRE(after.table.NextDeadline() == clock.NowMicros() + kTimeout);
  clock.Advance(kTimeout);
  REQUIRE(after.table.CheckTimeouts().empty());
  REQUIRE(after.table.SchedulableTotals().size() == 1);  // still expected
  clock.Advance(1);
  REQUIRE(after.table.CheckTimeouts() == std::vector<std::string>{id});
  REQUIRE(after.table.SchedulableTotals().empty());  // no longer
  REQUIRE(after.table.Find(id)->state() == DEAD);
  REQUIRE(after.table.Find(id)->state_reason() == "not back within 2000 ms of the head's restart");
  // It may still come back later, under its id.
  REQUIRE((*after.table.Register(Agent("w1", "w1-a")))->node_id() == id);
  REQUIRE(after.table.IsSchedulable(id));
}

TEST_CASE("two agents of one host name keep their names across a head restart in either order", "[node_table][journal]") {
  FakeClock clock;
  MemoryJobStore store;
  {
    Head before(&clock, &store);
    REQUIRE((*before.table.Register(Agent("host", "a", /*name_given=*/false)))->name() == "host");
    REQUIRE((*before.table.Register(Agent("host", "b", /*name_given=*/false)))->name() == "host-2");
  }
  Head after(&clock, &store);
  const std::string first = after.IdOf("host"), second = after.IdOf("host-2");
  auto b = after.table.Register(Agent("host", "b", /*name_given=*/false));
  REQUIRE((*b)->name() == "host-2");
  REQUIRE((*b)->node_id() == second);
  auto a = after.table.Register(Agent("host", "a", /*name_given=*/false));
  REQUIRE((*a)->name() == "host");
  REQUIRE((*a)->node_id() == first);
  // A third agent of that host, new since the restart, takes a new name and id.
  auto c = after.table.Register(Agent("host", "c", /*name_given=*/false));
  REQUIRE((*c)->name() == "host-3");
}

TEST_CASE("the nodes' journal keeps each node's latest record and compacts what is older", "[journal]") {
  FakeClock clock;
  MemoryJobStore store;
  Head head(&clock, &store);
  for (const char* name : {"w1", "w2", "w3"}) REQUIRE(head.table.Register(Agent(name, name)).ok());
  // Agents that reconnect all day long: every registration is a record.
  for (int i = 0; i < 20000; ++i) REQUIRE(head.table.Register(Agent("w2", "w2")).ok());
  INFO(store.bytes() << " bytes");
  REQUIRE(store.bytes() < (2u << 20));
  NodeJournal reread(&clock, &store, [] { return std::vector<NodeRecord>(); });
  auto records = reread.Load();
  REQUIRE(records.ok());
  REQUIRE(records->size() == 3);
  REQUIRE((*records)[1].info().name() == "w2");
  REQUIRE((*records)[1].info().incarnation() == 20001);
}

TEST_CASE("a node put back after a head restart is its machine's until the node timeout", "[node_table][journal]") {
  FakeClock clock;
  MemoryJobStore store;
  const NodeTable::Origin machine_a{"10.0.0.1", "10.0.0.1"}, machine_b{"10.0.0.2", "10.0.0.2"};
  std::string id;
  {
    Head before(&clock, &store);
    id = (*before.table.Register(Agent("a", "first"), machine_a))->node_id();
  }
  Head after(&clock, &store);
  // Another machine's agent under the same --node-name while the first may
  // still run ranks there: refused, as beside a live node.
  auto impostor = after.table.Register(Agent("a", "other"), machine_b);
  REQUIRE(impostor.status().code() == Status::Code::kAlreadyExists);
  // Without a name of its own it is renamed.
  REQUIRE((*after.table.Register(Agent("a", "other", /*name_given=*/false), machine_b))->name() == "a-2");
  // The machine's own agent, started again while the head was away (a
  // reboot, a crashed head's own agent): its node at once.
  auto again = after.table.Register(Agent("a", "restarted"), machine_a);
  REQUIRE(again.ok());
  CHECK((*again)->node_id() == id);
  CHECK((*again)->state() == ALIVE);
}

TEST_CASE("a head whose nodes' journal cannot be read starts without its nodes and writes the journal anew",
          "[node_table][journal]") {
  testing::QuietLogs quiet;
  FakeClock clock;
  MemoryJobStore jobs, nodes;
  LogStore logs("");
  Config config;
  {
    HeadCore head(&clock, config, &jobs, &logs, nullptr, nullptr, &nodes);
    REQUIRE(head.Restore().ok());
  }
  nodes.set_fail_loads(true);
  HeadCore head(&clock, config, &jobs, &logs, nullptr, nullptr, &nodes);
  REQUIRE(head.Restore().ok());
  REQUIRE(head.nodes().Nodes().empty());
}
