// HeadLink against the head's real agent service on a loopback port (no
// processes): what it queues reaches the head, a head that goes away is
// noticed and sends are refused rather than blocked, and a head that comes
// back on the same address is joined again by itself.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

#include "agent_head_server.h"
#include "daemon/agent/head_link.h"

using namespace clusterd;
using namespace clusterd::testing;

TEST_CASE("the head link delivers what it queues, notices a head that goes away, and rejoins one that comes back",
          "[head_link]") {
  QuietLogs quiet;
  auto head = std::make_unique<AgentHeadServer>(0);
  int port = head->port;
  std::atomic<int> registrations{0};
  std::unique_ptr<HeadLink> link_owner = QuickLink(port, &registrations);
  HeadLink& link = *link_owner;
  auto registered = link.Start(10'000);
  REQUIRE(registered.ok());
  REQUIRE(registered->name() == "n1");
  REQUIRE(Eventually([&] { return registrations == 1; }));  // called just after Start returns
  REQUIRE(head->StateOf("n1") == ALIVE);

  // Queued, then written by the link's writer: the head hears it.
  AgentMessage draining;
  draining.mutable_draining()->set_reason("test");
  REQUIRE(link.Send(draining));
  REQUIRE(link.Flush(10'000));
  REQUIRE(Eventually([&] { return head->StateOf("n1") == DRAINING; }));

  // The head goes away: noticed, and sends are refused at once, not blocked.
  head.reset();
  REQUIRE(Eventually([&] { return !link.connected(); }));
  auto before = std::chrono::steady_clock::now();
  REQUIRE_FALSE(link.Send(draining));
  REQUIRE(std::chrono::steady_clock::now() - before < std::chrono::seconds(1));

  // A head on the same address again: the link registers with it by itself.
  head = std::make_unique<AgentHeadServer>(port);
  REQUIRE(Eventually([&] { return link.connected() && registrations == 2; }));
  REQUIRE(Eventually([&] { return head->StateOf("n1") == ALIVE; }));
  link.Stop();
}
