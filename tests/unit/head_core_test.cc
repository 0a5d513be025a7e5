#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

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

// Registers each name on a stream of its own ("head" as the head's node),
// in the order given; the streams, in the same order.
std::vector<std::shared_ptr<FakeAgentConnection>> RegisterAll(HeadCore& head, const std::vector<std::string>& names,
                                                              double cpus) {
  std::vector<std::shared_ptr<FakeAgentConnection>> links;
  for (const std::string& name : names) {
    links.push_back(std::make_shared<FakeAgentConnection>());
    head.OnAgentMessage(links.back(), Register(name, cpus, name == "head"));
  }
  return links;
}

Config TestConfig() {
  Config c;
  c.heartbeat_ms = 500;
  c.node_timeout_ms = 2000;
  return c;
}

// A head on a fake clock with an in-memory journal, as every test here needs.
struct TestHead {
  FakeClock clock;
  MemoryJobStore store;
  LogStore logs{""};
  HeadCore head{&clock, TestConfig(), &store, &logs};
};

}  // namespace

TEST_CASE_METHOD(TestHead, "registration is acknowledged with the node id and heartbeat period", "[head_core]") {
  auto conn = std::make_shared<FakeAgentConnection>();
  head.OnAgentMessage(conn, Register("w1", 2));
  REQUIRE(conn->sent.size() == 1);
  REQUIRE(conn->sent[0].registered().name() == "w1");
  REQUIRE(conn->sent[0].registered().heartbeat_ms() == 500);
  REQUIRE(head.GetStatus().nodes(0).state() == ALIVE);
}

TEST_CASE_METHOD(TestHead, "a stream that does not register first is closed", "[head_core]") {
  auto conn = std::make_shared<FakeAgentConnection>();
  head.OnAgentMessage(conn, Beat());
  REQUIRE(conn->closed);
  REQUIRE(conn->close_status.code() == Status::Code::kFailedPrecondition);
}

TEST_CASE_METHOD(TestHead, "timeout kills a silent node and closes its stream, status totals count live nodes",
                 "[head_core][liveness]") {
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

TEST_CASE_METHOD(TestHead,
                 "heartbeats recorded off the loop keep a node alive, timed from when they arrived, not when taken",
                 "[head_core][liveness]") {
  auto w1 = std::make_shared<FakeAgentConnection>();
  head.OnAgentMessage(w1, Register("w1", 4));
  const int64_t registered_ms = head.GetStatus().nodes(0).last_heartbeat_unix_ms();

  // Four heartbeats arrive, 500 ms apart, none through OnAgentMessage.
  for (int i = 0; i < 4; ++i) {
    clock.AdvanceMillis(500);
    w1->recorded = AgentConnection::Heard{clock.NowMicros(), NodeUsage()};
    w1->recorded->usage.set_cpu_load(i);
    head.Tick();
  }
  REQUIRE_FALSE(w1->closed);
  ClusterStatus status = head.GetStatus();
  REQUIRE(status.nodes(0).state() == ALIVE);
  REQUIRE(status.nodes(0).usage().cpu_load() == 3);
  REQUIRE(status.nodes(0).last_heartbeat_unix_ms() == registered_ms + 2000);

  // One more arrives, but the head's next tick comes 1.5 s later: the
  // node is timed from the arrival, so it dies 2 s after that, not later.
  clock.AdvanceMillis(500);
  w1->recorded = AgentConnection::Heard{clock.NowMicros(), NodeUsage()};
  clock.AdvanceMillis(1500);
  head.Tick();
  REQUIRE(head.GetStatus().nodes(0).last_heartbeat_unix_ms() == registered_ms + 2500);
  clock.AdvanceMillis(500);
  head.Tick();
  REQUIRE_FALSE(w1->closed);
  clock.AdvanceMillis(1);
  head.Tick();
  REQUIRE(w1->closed);
  REQUIRE(head.GetStatus().nodes(0).state() == DEAD);
}

// A head stopped for 4-6 s (SIGSTOP) must not take its own silence for its
// nodes' at its first tick back and fail every job.
TEST_CASE_METHOD(TestHead,
                 "a head that did not run for seconds gives its nodes that long again and a node still silent then dies",
                 "[head_core][liveness]") {
  auto a = std::make_shared<FakeAgentConnection>();
  auto b = std::make_shared<FakeAgentConnection>();
  head.OnAgentMessage(a, Register("w1", 4));
  head.OnAgentMessage(b, Register("w2", 4));
  for (int i = 0; i < 2; ++i) {
    clock.AdvanceMillis(500);
    head.OnAgentMessage(a, Beat());
    head.OnAgentMessage(b, Beat());
    head.Tick();
  }
  // Stopped for 6 s: no tick, nothing heard.
  clock.AdvanceMillis(6000);
  head.Tick();
  REQUIRE_FALSE(a->closed);
  REQUIRE_FALSE(b->closed);
  // Back: a's heartbeats come again, b's never do (it died meanwhile).
  for (int i = 0; i < 3; ++i) {
    clock.AdvanceMillis(500);
    head.OnAgentMessage(a, Beat());
    head.Tick();
  }
  // Its own silence: the 0.5 s before the tick the head missed, 1.5 s after.
  REQUIRE_FALSE(b->closed);
  clock.AdvanceMillis(1);
  head.Tick();
  REQUIRE(b->closed);
  REQUIRE_FALSE(a->closed);
  REQUIRE(head.GetStatus().nodes(0).state() == ALIVE);
  REQUIRE(head.GetStatus().nodes(1).state() == DEAD);
}

TEST_CASE_METHOD(TestHead, "a broken stream kills its node with the cause, stop-node names who stopped it",
                 "[head_core]") {
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

TEST_CASE_METHOD(TestHead,
                 "a status summary lists a few nodes of each state with whole counts, and follows changes at once",
                 "[head_core][status]") {
  auto links = RegisterAll(head, {"w3", "w1", "head", "w2", "w4"}, 2);
  head.OnAgentDisconnected(links[3].get(), "gone");  // w2

  ClusterStatus summary = head.GetStatus(2);
  REQUIRE(summary.node_counts().alive() == 4);
  REQUIRE(summary.node_counts().dead() == 1);
  REQUIRE(summary.nodes_size() == 3);  // head and w1 of the ALIVE, w2 of the DEAD
  CHECK(summary.nodes(0).name() == "head");
  CHECK(summary.nodes(1).name() == "w1");
  CHECK(summary.nodes(2).name() == "w2");
  CHECK(Amount(summary.total(), kCpu) == 8);
  CHECK(head.GetStatus(0).nodes_size() == 5);

  // A registration changes the table: the next summary shows it, snapshot or not.
  auto w5 = std::make_shared<FakeAgentConnection>();
  head.OnAgentMessage(w5, Register("w5", 2));
  CHECK(head.GetStatus(2).node_counts().alive() == 5);

  // A heartbeat's usage alone waits for the snapshot to age one heartbeat period.
  AgentMessage busy = Beat();
  busy.mutable_heartbeat()->mutable_usage()->set_running_ranks(3);
  head.OnAgentMessage(links[2], busy);  // head
  CHECK(head.GetStatus(2).nodes(0).usage().running_ranks() == 0);
  clock.AdvanceMillis(500);
  CHECK(head.GetStatus(2).nodes(0).usage().running_ranks() == 3);
}

TEST_CASE_METHOD(TestHead, "ListNodes pages through the table, the head first, then by name", "[head_core][status]") {
  RegisterAll(head, {"b", "z", "head", "a", "c"}, 1);
  std::vector<std::string> seen;
  ListNodesRequest request;
  request.set_page_size(2);
  int pages = 0;
  do {
    ListNodesReply page = head.ListNodes(request);
    REQUIRE(page.counts().alive() == 5);
    REQUIRE(page.nodes_size() <= 2);
    for (const auto& node : page.nodes()) seen.push_back(node.name());
    request.set_page_token(page.next_page_token());
    ++pages;
  } while (!request.page_token().empty());
  CHECK(pages == 3);
  CHECK(seen == std::vector<std::string>{"head", "a", "b", "c", "z"});

  // The default page holds them all; a token past the end gives none.
  CHECK(head.ListNodes(ListNodesRequest()).nodes_size() == 5);
  request.set_page_token("zz");
  CHECK(head.ListNodes(request).nodes_size() == 0);
}
