#include <catch2/catch.hpp>

#include <memory>

#include "common/resources.h"
#include "daemon/head/head_core.h"
#include "fake_agent_connection.h"

using namespace clusterd;
using clusterd::testing::FakeAgentConnection;

namespace {

AgentMessage Register(const std::string& name, double cpus, bool head = false) {
  AgentMessage m;
  auto* r = m.mutable_register_();
  r->set_name(name);
  r->set_name_given(true);
  r->set_address("127.0.0.1");
  r->set_instance_id(name);
  r->set_is_head(head);
  (*r->mutable_total()->mutable_amounts())[kCpu] = cpus;
  return m;
}

AgentMessage Beat() {
  AgentMessage m;
  m.mutable_heartbeat()->set_seq(1);
  return m;
}

Config TestConfig() {
  Config c;
  c.heartbeat_ms = 500;
  c.node_timeout_ms = 2000;
  return c;
}

}  // namespace

TEST_CASE("registration is acknowledged with the node id and heartbeat period", "[head_core]") {
  FakeClock clock;
  MemoryJobStore store;
  LogStore logs("");
  HeadCore head(&clock, TestConfig(), &store, &logs);
  auto conn = std::make_shared<FakeAgentConnection>();
  head.OnAgentMessage(conn, Register("w1", 2));
  REQUIRE(conn->sent.size() == 1);
  REQUIRE(conn->sent[0].registered().name() == "w1");
  REQUIRE(conn->sent[0].registered().heartbeat_ms() == 500);
  REQUIRE(head.GetStatus().nodes(0).state() == ALIVE);
}

TEST_CASE("a stream that does not register first is closed", "[head_core]") {
  FakeClock clock;
  MemoryJobStore store;
  LogStore logs("");
  HeadCore head(&clock, TestConfig(), &store, &logs);
  auto conn = std::make_shared<FakeAgentConnection>();
  head.OnAgentMessage(conn, Beat());
  REQUIRE(conn->closed);
  REQUIRE(conn->close_status.code() == Status::Code::kFailedPrecondition);
}

TEST_CASE("timeout kills a silent node and closes its stream, status totals count live nodes", "[head_core][liveness]") {
  FakeClock clock;
  MemoryJobStore store;
  LogStore logs("");
  HeadCore head(&clock, TestConfig(), &store, &logs);
  auto a = std::make_shared<FakeAgentConnection>();
  auto b = std::make_shared<FakeAgentConnection>();
  head.OnAgentMessage(a, Register("head", 2, true));
  head.OnAgentMessage(b, Register("w1", 4));
  REQUIRE(Amount(head.GetStatus().total(), kCpu) == 6);

  // a keeps beating, b is silent (SIGSTOP).
  for (int i = 0; i < 4; ++i) {
    clock.AdvanceMillis(500);
    head.OnAgentMessage(a, Beat());
    head.Tick();
  }
  REQUIRE_FALSE(b->closed);
  clock.AdvanceMillis(1);
  Micros next = head.Tick();
  REQUIRE(b->closed);
  REQUIRE(b->close_status.code() == Status::Code::kUnavailable);
  auto status = head.GetStatus();
  REQUIRE(status.nodes(0).name() == "head");  // the head is listed first
  REQUIRE(status.nodes(1).state() == DEAD);
  REQUIRE(Amount(status.total(), kCpu) == 2);
  // The next tick is due when the live node would time out, at the latest one heartbeat away.
  REQUIRE(next <= clock.NowMicros() + 500'000);

  // A late message on the dead stream does not revive the node.
  head.OnAgentMessage(b, Beat());
  REQUIRE(head.GetStatus().nodes(1).state() == DEAD);

  // SIGCONT: the agent reconnects and registers again.
  auto b2 = std::make_shared<FakeAgentConnection>();
  head.OnAgentMessage(b2, Register("w1", 4));
  REQUIRE(head.GetStatus().nodes(1).state() == ALIVE);
  REQUIRE(head.GetStatus().nodes(1).incarnation() == 2);
}

TEST_CASE("a broken stream kills its node with the cause, stop-node names who stopped it", "[head_core]") {
  FakeClock clock;
  MemoryJobStore store;
  LogStore logs("");
  HeadCore head(&clock, TestConfig(), &store, &logs);
  auto h = std::make_shared<FakeAgentConnection>();
  auto a = std::make_shared<FakeAgentConnection>();
  auto b = std::make_shared<FakeAgentConnection>();
  head.OnAgentMessage(h, Register("head", 1, true));
  head.OnAgentMessage(a, Register("w1", 1));
  head.OnAgentMessage(b, Register("w2", 1));

  head.OnAgentDisconnected(a.get(), "connection lost");
  REQUIRE(head.nodes().Find("w1")->state() == DEAD);
  REQUIRE(head.nodes().Find("w1")->state_reason() == "connection lost");

  auto stopped = head.StopNode("w2");
  REQUIRE(stopped.ok());
  REQUIRE(b->sent.back().has_stop());
  head.OnAgentDisconnected(b.get(), "stream closed");
  REQUIRE(head.nodes().Find("w2")->state_reason() == "stopped by clusterctl stop-node");

  REQUIRE(head.StopNode("head").status().code() == Status::Code::kFailedPrecondition);
  REQUIRE(head.StopNode("w2").status().code() == Status::Code::kFailedPrecondition);
  REQUIRE(head.StopNode("zz").status().code() == Status::Code::kNotFound);
}
