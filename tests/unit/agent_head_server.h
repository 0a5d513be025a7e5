// The head's side of the node agents' stream, for agent tests: a HeadCore
// behind the real agent port and AgentService (Locate) on loopback ports,
// its calls on a real EventLoop. No processes.
#pragma once

#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server.h>
#include <grpcpp/server_builder.h>

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "common/resources.h"
#include "daemon/agent/head_link.h"
#include "daemon/rpc/agent_service.h"
#include "daemon/rpc/agent_wire_server.h"
#include "daemon/rpc/server_limits.h"
#include "eventually.h"
#include "head_harness.h"
#include "temp_tree.h"

namespace clusterd::testing {

inline constexpr const char* kToken = "head-link-test-token";

// A head with only its agent service, on `port` (0: any), and its agent port.
struct AgentHeadServer {
  TempTree dir;
  SystemClock clock;
  MemoryJobStore store;
  LogStore logs{dir.Path("jobs")};
  Config config;
  HeadCore core{&clock, config, &store, &logs};
  EventLoop loop{"test-loop"};
  AgentWireServer wire{&core, &loop, HeadPortGuard(config)};
  AgentService service{kToken};
  std::unique_ptr<grpc::Server> server;
  int port = 0;

  // hello_deadline_ms: how long a connection may stay silent before its hello.
  explicit AgentHeadServer(int wanted, int hello_deadline_ms = Config().unproven_connection_timeout_ms) {
    core.users().SetAdminToken(kToken);
    wire.set_hello_deadline_ms(hello_deadline_ms);
    REQUIRE(wire.Start("127.0.0.1", 0, TlsConfig{}).ok());
    service.set_agent_port(wire.port());
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:" + std::to_string(wanted), grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&service);
    server = builder.BuildAndStart();
    REQUIRE(server);
    REQUIRE(port > 0);
    loop.Start();
  }
  ~AgentHeadServer() { Shutdown(); }
  void Shutdown() {
    wire.Stop();
    if (server) server->Shutdown(std::chrono::system_clock::now());
    server.reset();
    loop.Stop();
  }
  NodeState StateOf(const std::string& name) {
    ClusterStatus status = loop.Call<ClusterStatus>([this] { return core.GetStatus(); });
    for (const NodeInfo& node : status.nodes()) {
      if (node.name() == name) return node.state();
    }
    return NODE_STATE_UNSPECIFIED;
  }
};

// A HeadLink, not yet started, for node "n1" (1 CPU) to a head on this
// machine's `port`, that beats and reconnects quickly so that tests of a
// head going away and back are short; counts its registrations.
inline std::unique_ptr<HeadLink> QuickLink(int port, std::atomic<int>* registrations) {
  HeadLink::Options options;
  options.head_address = "127.0.0.1:" + std::to_string(port);
  options.token = kToken;
  options.heartbeat_ms = 100;
  options.reconnect_initial_ms = 50;
  options.reconnect_max_ms = 200;
  auto registration = [] {
    RegisterNode r;
    r.set_name("n1");
    r.set_name_given(true);
    r.set_address("127.0.0.1");
    r.set_instance_id("n1-test");
    (*r.mutable_total()->mutable_amounts())[kCpu] = 1;
    return r;
  };
  return std::make_unique<HeadLink>(
      options, registration, [] { return NodeUsage(); }, [](const HeadMessage&) {},
      [registrations](const Registered&) { ++*registrations; });
}

}  // namespace clusterd::testing
