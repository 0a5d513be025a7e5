// Who a node is, alone: ids handed out in order, an agent's own entry back
// whatever name it asks for, names taken again only from the dead (or by a
// restored node's own machine), and the order clients see.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "daemon/head/node_roster.h"

using namespace clusterd;

namespace {

RegisterNode Request(const std::string& name, const std::string& instance, bool name_given = false) {
  RegisterNode request;
  request.set_name(name);
  request.set_instance_id(instance);
  request.set_name_given(name_given);
  return request;
}

NodeRoster::Entry& Add(NodeRoster& roster, const std::string& name, const std::string& instance, NodeState state) {
  NodeRoster::Entry& entry = roster.AddNew(name);
  entry.info.set_name(name);
  entry.info.set_state(state);
  roster.SetInstance(entry, instance);
  return entry;
}

std::vector<std::string> Names(const std::vector<const NodeInfo*>& nodes) {
  std::vector<std::string> names;
  for (const NodeInfo* node : nodes) names.push_back(node->name());
  return names;
}

}  // namespace

TEST_CASE("a registration finds its agent's own entry, a dead node's name, or a new name", "[node_table][node_roster]") {
  NodeRoster roster;
  NodeRoster::Entry& w1 = Add(roster, "w1", "agent-1", ALIVE);
  CHECK(w1.info.node_id() == "node-0001");
  std::string name;

  // The same agent asking for another name gets its own entry and name.
  auto own = roster.EntryFor(Request("other", "agent-1"), "", &name);
  REQUIRE(own.ok());
  CHECK(*own == &w1);
  CHECK(name == "w1");

  // Another agent asking for a live node's name: refused when insisted on, else renamed.
  CHECK(roster.EntryFor(Request("w1", "agent-2", true), "", &name).status().code() == Status::Code::kAlreadyExists);
  auto renamed = roster.EntryFor(Request("w1", "agent-2"), "", &name);
  REQUIRE(renamed.ok());
  CHECK(*renamed == nullptr);
  CHECK(name == "w1-2");

  // A dead node's name goes to the next agent that asks.
  w1.info.set_state(DEAD);
  auto reused = roster.EntryFor(Request("w1", "agent-3", true), "", &name);
  REQUIRE(reused.ok());
  CHECK(*reused == &w1);
  CHECK(roster.Find("w1") == &w1);
  CHECK(roster.Find("node-0001") == &w1);
  CHECK(roster.Find("nobody") == nullptr);
}

TEST_CASE("a restored node's name goes to an agent on its machine only", "[node_table][node_roster]") {
  NodeRoster roster;
  NodeRecord record;
  record.mutable_info()->set_node_id("node-0007");
  record.mutable_info()->set_name("w1");
  record.mutable_info()->set_state(ALIVE);
  record.set_instance_id("old-agent");
  record.set_machine("m1");
  NodeRoster::Entry& entry = roster.Put(record);
  entry.restored = true;
  std::string name;
  CHECK(roster.EntryFor(Request("w1", "new-agent", true), "m2", &name).status().code() == Status::Code::kAlreadyExists);
  auto same_machine = roster.EntryFor(Request("w1", "new-agent", true), "m1", &name);
  REQUIRE(same_machine.ok());
  CHECK(*same_machine == &entry);
  CHECK(roster.AddNew("w2").info.node_id() == "node-0008");  // ids go on after the restored ones
}

TEST_CASE("the roster lists the head first then by name and pages after a name", "[node_table][node_roster]") {
  NodeRoster roster;
  Add(roster, "b", "", ALIVE);
  Add(roster, "a", "", DEAD);
  roster.SetHead(Add(roster, "z-head", "", DRAINING));
  CHECK(Names(roster.Nodes()) == std::vector<std::string>{"z-head", "a", "b"});
  bool more = false;
  CHECK(Names(roster.Page("", 2, &more)) == std::vector<std::string>{"z-head", "a"});
  CHECK(more);
  CHECK(Names(roster.Page("a", 2, &more)) == std::vector<std::string>{"b"});
  CHECK_FALSE(more);
  const NodeCounts counts = roster.Counts();
  CHECK(counts.alive() == 1);
  CHECK(counts.draining() == 1);
  CHECK(counts.dead() == 1);
}
