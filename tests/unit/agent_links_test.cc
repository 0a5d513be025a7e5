// AgentLinks alone, over a node table on a fake clock and recording
// streams: which node each stream speaks for, registration on a stream, a
// newer stream replacing an older one, signs of life, and a node made DEAD
// when its stream breaks.
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/resources.h"
#include "daemon/head/agent_links.h"
#include "fake_agent_connection.h"

using namespace clusterd;
using clusterd::testing::FakeAgentConnection;

namespace {

RegisterNode Registration(const std::string& name) {
  RegisterNode r;
  r.set_name(name);
  r.set_name_given(true);
  r.set_address("127.0.0.1");
  r.set_instance_id(name);
  (*r.mutable_total()->mutable_amounts())[kCpu] = 2;
  return r;
}

AgentMessage Beat(double cpu_load = 0) {
  AgentMessage m;
  m.mutable_heartbeat()->set_seq(1);
  m.mutable_heartbeat()->mutable_usage()->set_cpu_load(cpu_load);
  return m;
}

// Streams over a node table with a 2 s timeout and a 500 ms heartbeat,
// recording which streams were forgotten.
struct Links {
  FakeClock clock;
  NodeTable nodes{&clock, 2'000'000};
  std::vector<AgentConnection*> forgotten;
  AgentLinks links{&nodes, 500, [this](AgentConnection* connection) { forgotten.push_back(connection); }};

  std::shared_ptr<FakeAgentConnection> Registered(const std::string& name) {
    auto connection = std::make_shared<FakeAgentConnection>();
    REQUIRE(links.Register(connection, Registration(name)) != nullptr);
    return connection;
  }
  const NodeInfo& Node(const std::string& name) const { return *nodes.Find(name); }
};

}  // namespace

TEST_CASE("a registration is answered with the node's id, name, incarnation and heartbeat period", "[agent_links]") {
  Links t;
  auto connection = std::make_shared<FakeAgentConnection>();
  const NodeInfo* info = t.links.Register(connection, Registration("w1"));
  REQUIRE(info != nullptr);
  REQUIRE(info->state() == ALIVE);
  REQUIRE(connection->sent.size() == 1);
  const Registered& ack = connection->sent[0].registered();
  REQUIRE(ack.node_id() == info->node_id());
  REQUIRE(ack.name() == "w1");
  REQUIRE(ack.incarnation() == info->incarnation());
  REQUIRE(ack.heartbeat_ms() == 500);
  REQUIRE_FALSE(connection->closed);
}

TEST_CASE("a stream that speaks before registering, or registers twice, is closed", "[agent_links]") {
  Links t;
  auto silent = std::make_shared<FakeAgentConnection>();
  REQUIRE_FALSE(t.links.Heard(silent, Beat()));
  REQUIRE(silent->closed);
  REQUIRE(silent->close_status.code() == Status::Code::kFailedPrecondition);
  REQUIRE(t.forgotten == std::vector<AgentConnection*>{silent.get()});

  auto twice = t.Registered("w1");
  REQUIRE(t.links.Register(twice, Registration("w1")) == nullptr);
  REQUIRE(twice->closed);
  REQUIRE(twice->close_status.code() == Status::Code::kFailedPrecondition);
}

TEST_CASE("a refused registration closes the stream with the table's reason", "[agent_links]") {
  Links t;
  t.Registered("w1");
  auto rival = std::make_shared<FakeAgentConnection>();
  RegisterNode same_name = Registration("w1");
  same_name.set_instance_id("another agent");
  REQUIRE(t.links.Register(rival, same_name) == nullptr);
  REQUIRE(rival->closed);
  REQUIRE_FALSE(rival->close_status.ok());
  REQUIRE(rival->sent.empty());
}

TEST_CASE("any message is a sign of life, and a heartbeat also brings the node's usage", "[agent_links]") {
  Links t;
  auto w1 = t.Registered("w1");
  t.clock.AdvanceMillis(1500);
  REQUIRE(t.links.Heard(w1, Beat(3)) == std::optional<std::string>(t.Node("w1").node_id()));
  REQUIRE(t.Node("w1").usage().cpu_load() == 3);
  t.clock.AdvanceMillis(1500);
  AgentMessage log;
  log.mutable_log()->set_job_id("j");
  REQUIRE(t.links.Heard(w1, log));
  REQUIRE(t.Node("w1").usage().cpu_load() == 3);  // kept, not zeroed
  t.clock.AdvanceMillis(1500);
  REQUIRE(t.nodes.CheckTimeouts().empty());  // 3 s since registering, 1.5 s since last heard
}

TEST_CASE("heartbeats recorded off the loop are collected at the time they arrived", "[agent_links]") {
  Links t;
  auto w1 = t.Registered("w1");
  t.clock.AdvanceMillis(1000);
  w1->recorded = AgentConnection::Heard{t.clock.NowMicros(), NodeUsage()};
  t.clock.AdvanceMillis(1000);
  t.links.CollectHeartbeats();
  REQUIRE_FALSE(w1->recorded);  // taken
  t.clock.AdvanceMillis(1000);
  REQUIRE(t.nodes.CheckTimeouts().empty());  // 2 s since it arrived
  t.clock.AdvanceMillis(1);
  REQUIRE(t.nodes.CheckTimeouts() == std::vector<std::string>{t.Node("w1").node_id()});
}

TEST_CASE("a stream whose incarnation the table counts as gone is closed on its next word", "[agent_links]") {
  Links t;
  auto w1 = t.Registered("w1");
  t.clock.AdvanceMillis(2001);
  REQUIRE(t.nodes.CheckTimeouts().size() == 1);
  REQUIRE_FALSE(t.links.Heard(w1, Beat()));
  REQUIRE(w1->closed);
  REQUIRE(w1->close_status.code() == Status::Code::kUnavailable);
  REQUIRE(t.Node("w1").state() == DEAD);

  auto collected = t.Registered("w2");
  t.clock.AdvanceMillis(2001);
  REQUIRE(t.nodes.CheckTimeouts().size() == 1);
  collected->recorded = AgentConnection::Heard{t.clock.NowMicros(), NodeUsage()};
  t.links.CollectHeartbeats();
  REQUIRE(collected->closed);
  REQUIRE(t.Node("w2").state() == DEAD);
}

TEST_CASE("a newer stream of the same node replaces the old one", "[agent_links]") {
  Links t;
  auto old_stream = t.Registered("w1");
  auto new_stream = t.Registered("w1");
  REQUIRE(old_stream->closed);
  REQUIRE(old_stream->close_status.code() == Status::Code::kUnavailable);
  REQUIRE(t.forgotten == std::vector<AgentConnection*>{old_stream.get()});

  HeadMessage ping;
  ping.mutable_stop()->set_reason("test");
  REQUIRE(t.links.SendToNode(t.Node("w1").node_id(), ping));
  REQUIRE(new_stream->sent.size() == 2);  // its registration's answer, then this
  REQUIRE(old_stream->sent.size() == 1);

  // The old stream's end, seen late, does not kill the node.
  REQUIRE_FALSE(t.links.Disconnected(old_stream.get(), "broken"));
  REQUIRE(t.Node("w1").state() == ALIVE);
}

TEST_CASE("a broken stream makes its node DEAD with the reason the head or agent gave, else the cause", "[agent_links]") {
  Links t;
  auto plain = t.Registered("w1");
  auto stopped = t.Registered("w2");
  auto draining = t.Registered("w3");
  HeadMessage stop;
  stop.mutable_stop()->set_reason("clusterctl stop-node");
  REQUIRE(t.links.AskToStop(t.Node("w2").node_id(), "stopped by clusterctl stop-node", stop));
  REQUIRE(stopped->sent.back().has_stop());
  t.links.SetStopReason(draining.get(), "its node agent is stopping");
  t.links.SetStopReason(draining.get(), "a later reason");  // the first one stays

  REQUIRE(t.links.Disconnected(plain.get(), "stream broke") == std::optional<std::string>(t.Node("w1").node_id()));
  t.links.Disconnected(stopped.get(), "stream broke");
  t.links.Disconnected(draining.get(), "stream broke");
  REQUIRE(t.Node("w1").state() == DEAD);
  REQUIRE(t.Node("w1").state_reason().find("stream broke") != std::string::npos);
  REQUIRE(t.Node("w2").state_reason().find("stopped by clusterctl stop-node") != std::string::npos);
  REQUIRE(t.Node("w3").state_reason().find("its node agent is stopping") != std::string::npos);
  REQUIRE(t.forgotten.size() == 3);

  // Gone: nothing more is sent there, and a second end changes nothing.
  REQUIRE_FALSE(t.links.SendToNode(t.Node("w1").node_id(), stop));
  REQUIRE_FALSE(t.links.AskToStop(t.Node("w1").node_id(), "x", stop));
  REQUIRE_FALSE(t.links.Disconnected(plain.get(), "again"));
}

TEST_CASE("while the head stops, a broken stream does not make its node DEAD", "[agent_links]") {
  Links t;
  auto w1 = t.Registered("w1");
  t.links.Stopping();
  REQUIRE_FALSE(t.links.Disconnected(w1.get(), "head closing"));
  REQUIRE(t.Node("w1").state() == ALIVE);
  REQUIRE(t.forgotten == std::vector<AgentConnection*>{w1.get()});
}

TEST_CASE("the head closes a node's stream and forgets it", "[agent_links]") {
  Links t;
  auto w1 = t.Registered("w1");
  const std::string id = t.Node("w1").node_id();
  t.links.CloseNode(id, Status::Unavailable("declared dead"));
  REQUIRE(w1->closed);
  REQUIRE(w1->close_status.message() == "declared dead");
  REQUIRE(t.forgotten == std::vector<AgentConnection*>{w1.get()});
  HeadMessage any;
  REQUIRE_FALSE(t.links.SendToNode(id, any));
  t.links.CloseNode(id, Status::Unavailable("again"));  // no stream: nothing happens
  REQUIRE(w1->close_status.message() == "declared dead");
}

TEST_CASE("a node's machine is the address its stream comes from, or the head's for a local one", "[agent_links]") {
  Links t;
  t.links.set_local_addresses({"10.0.0.1"});
  auto remote = std::make_shared<FakeAgentConnection>();
  remote->peer = "ipv4:10.0.0.2:5555";
  RegisterNode r = Registration("remote");
  r.set_address("10.0.0.2");
  REQUIRE(t.links.Register(remote, r));
  REQUIRE(t.Node("remote").observed_address() == "10.0.0.2");
  REQUIRE(t.nodes.MachineOf(t.Node("remote").node_id()) == "10.0.0.2");

  auto local = std::make_shared<FakeAgentConnection>();
  local->peer = "ipv4:10.0.0.1:5556";
  RegisterNode l = Registration("local");
  l.set_address("10.0.0.1");
  REQUIRE(t.links.Register(local, l));
  REQUIRE(t.Node("local").observed_address() == "10.0.0.1");
  REQUIRE(t.nodes.MachineOf(t.Node("local").node_id()).empty());  // the head's machine

  // Without a peer the claimed address is all there is: loopback is the head's.
  auto unseen = std::make_shared<FakeAgentConnection>();
  unseen->peer = "";
  REQUIRE(t.links.Register(unseen, Registration("unseen")));
  REQUIRE(t.nodes.MachineOf(t.Node("unseen").node_id()).empty());
}
