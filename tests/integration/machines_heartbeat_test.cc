// Heartbeats as UDP datagrams across simulated machines: what a firewall
// that lets the agents' TCP port through but drops UDP does to them. The
// head's machine drops every datagram to its port that arrives on eth0 (an
// input route to a blackhole, the closest thing to a firewall rule here:
// no iptables or nft), and no node may die of it.
#include <catch2/catch.hpp>
#include <string>
#include <thread>

#include "machines_cluster.h"

using namespace clusterd;
using namespace clusterd::testing;
using namespace std::chrono_literals;

namespace {

std::string WorkerLog(Machine& m) {
  return m.Shell("cat /tmp/clusterd/session_latest/logs/*.log 2>/dev/null").out;
}

bool LogSays(Machine& m, const std::string& text, std::chrono::milliseconds limit) {
  return WaitFor([&] { return WorkerLog(m).find(text) != std::string::npos; }, limit, 100ms);
}

int64_t IncarnationOf(SimCluster& c, const std::string& name) {
  auto status = c.Status();
  if (!status) return -1;
  for (const auto& node : status->nodes()) {
    if (node.name() == name) return node.incarnation();
  }
  return -1;
}

// The head's machine drops UDP to 6379 from the network. Its local table
// would deliver them before any rule of ours, so it moves behind ours.
void DropHeartbeatDatagrams(Machine& head) {
  REQUIRE(head.Shell("ip rule add pref 10 iif eth0 ipproto udp dport 6379 blackhole && "
                     "ip rule del pref 0 && ip rule add pref 20 lookup local").exit_code == 0);
}

void PassHeartbeatDatagrams(Machine& head) { REQUIRE(head.Shell("ip rule del pref 10").exit_code == 0); }

}  // namespace

TEST_CASE("machines: heartbeats go as datagrams and where a firewall drops them on the stream: no node dies",
          "[machines]") {
  REQUIRE_SIM_NETWORK();
  SimCluster c;
  REQUIRE(c.WaitForState("w1", ALIVE, 10s));
  REQUIRE(c.WaitForState("w2", ALIVE, 10s));
  // Each worker sends them to the head's address at the agents' port (its
  // log starts after that line, printed as it joins), and the head tells
  // it that it hears them.
  REQUIRE(LogSays(c.w1, "the head hears this node's heartbeat datagrams", 5s));
  // Both: the head tells only a node it has heard that it stopped hearing it.
  REQUIRE(LogSays(c.w2, "the head hears this node's heartbeat datagrams", 5s));
  const int64_t w1_incarnation = IncarnationOf(c, "w1");
  REQUIRE(w1_incarnation > 0);

  DropHeartbeatDatagrams(c.head);
  // Two heartbeat periods of silence, then the head tells the agent, which
  // beats on its stream again at once: well inside the 2 s node timeout.
  REQUIRE(LogSays(c.w1, "the head no longer hears this node's heartbeat datagrams", 5s));
  REQUIRE(LogSays(c.w2, "the head no longer hears this node's heartbeat datagrams", 5s));

  SECTION("the nodes stay ALIVE past the node timeout, in the same incarnation") {
    std::this_thread::sleep_for(3s);
    REQUIRE(c.StateOf("w1") == ALIVE);
    REQUIRE(c.StateOf("w2") == ALIVE);
    REQUIRE(IncarnationOf(c, "w1") == w1_incarnation);
    // And the head never counted one DEAD meanwhile.
    REQUIRE(c.head.Shell("grep -h 'node w1 .*-> DEAD' /tmp/clusterd/session_latest/logs/*.log").exit_code != 0);

    // Let through again: heard again, and the stream carries none.
    c.w1.Shell("truncate -s 0 /tmp/clusterd/session_latest/logs/*.log");
    PassHeartbeatDatagrams(c.head);
    REQUIRE(LogSays(c.w1, "the head hears this node's heartbeat datagrams", 5s));
    REQUIRE(IncarnationOf(c, "w1") == w1_incarnation);
  }

  SECTION("a worker that joins behind the firewall is never heard by datagram and lives on its stream") {
    REQUIRE(c.w2.Run({"clusterd", "stop"}).exit_code == 0);
    c.w2.Shell("rm -f /tmp/clusterd/session_latest/logs/*.log");
    c.StartWorker(c.w2);
    REQUIRE(c.WaitForState("w2", ALIVE, 10s));
    const int64_t joined = IncarnationOf(c, "w2");
    std::this_thread::sleep_for(3s);
    REQUIRE(c.StateOf("w2") == ALIVE);
    REQUIRE(IncarnationOf(c, "w2") == joined);
    REQUIRE(WorkerLog(c.w2).find("the head hears this node's heartbeat datagrams") == std::string::npos);
  }
}

TEST_CASE("machines: where the head's answers to heartbeat datagrams are dropped, agents ask on their streams and "
          "stay connected",
          "[machines]") {
  REQUIRE_SIM_NETWORK();
  SimCluster c;
  REQUIRE(c.WaitForState("w1", ALIVE, 10s));
  REQUIRE(LogSays(c.w1, "the head hears this node's heartbeat datagrams", 5s));
  const int64_t w1_incarnation = IncarnationOf(c, "w1");
  REQUIRE(w1_incarnation > 0);
  // Datagrams still reach the head, but nothing it sends from its UDP port
  // leaves its machine: the agent's asks for a sign of life go unanswered
  // by datagram. Unless it asks on its stream too, it drops the stream
  // within keepalive + timeout (4 s) and registers again.
  REQUIRE(c.head.Shell("ip rule add pref 100 ipproto udp sport 6379 blackhole").exit_code == 0);
  std::this_thread::sleep_for(10s);
  REQUIRE(c.StateOf("w1") == ALIVE);
  REQUIRE(IncarnationOf(c, "w1") == w1_incarnation);
  const std::string log = WorkerLog(c.w1);
  CHECK(log.find("has not answered") == std::string::npos);
  CHECK(log.find("lost the head") == std::string::npos);
  // The heartbeats themselves still go as datagrams.
  CHECK(log.find("no longer hears this node's heartbeat datagrams") == std::string::npos);
  REQUIRE(c.head.Shell("ip rule del pref 100").exit_code == 0);
}

// The other side of agent_stop_test's stopped head: a head whose machine
// no longer acknowledges anything (its cable pulled) is taken for gone, and
// the agent drops its stream within its keepalive bounds instead of TCP's
// retransmission timeout (minutes), and registers again once it is back.
TEST_CASE("machines: an agent drops its stream to a head whose machine stops acknowledging and registers again "
          "once it is back",
          "[machines]") {
  REQUIRE_SIM_NETWORK();
  SimCluster c;
  REQUIRE(c.WaitForState("w1", ALIVE, 10s));
  const int64_t before = IncarnationOf(c, "w1");
  REQUIRE(before > 0);
  c.head.CutLink();
  auto cut = std::chrono::steady_clock::now();
  const bool dropped = LogSays(c.w1, "does not acknowledge what this node sends: dropping the stream", 20s);
  const int64_t took = MillisSince(cut);
  c.head.RestoreLink();
  INFO("worker log:\n" << WorkerLog(c.w1));
  REQUIRE(dropped);
  WARN("the agent dropped its stream " << took << " ms after the head's cable was pulled");
  // keepalive_ms + keepalive_timeout_ms is 4 s by default; the rest is slack for a loaded machine.
  REQUIRE(took < 12'000);
  REQUIRE(WorkerLog(c.w1).find("keeping the stream") == std::string::npos);
  REQUIRE(WaitFor([&] { return c.StateOf("w1") == ALIVE && IncarnationOf(c, "w1") > before; }, 30s, 200ms));
}
