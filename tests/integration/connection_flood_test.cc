// Strangers' connections on the head's ports (issue: a connection flood,
// no token needed): connections that never prove the token are bounded per
// source address and per port, so the head's descriptors and memory stay
// small during a flood and come back after it; clients and agents that hold
// the token keep working during it; and the port keeps accepting after the
// head ran out of descriptors (gRPC 1.51 never accepts again after one
// failed accept).
#include <signal.h>
#include <sys/resource.h>

#include <grpcpp/grpcpp.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <thread>

#include "agent.grpc.pb.h"
#include "common/net/auth.h"
#include "connection_flood.h"
#include "harness.h"
#include "test_certs.h"

using namespace clusterd;
using namespace clusterd::testing;
using namespace std::chrono_literals;

namespace {

// The head's agent port, as an agent finds it.
int AgentPort(Cluster& cluster, const std::shared_ptr<grpc::ChannelCredentials>& credentials =
                                    grpc::InsecureChannelCredentials()) {
  auto stub = NodeAgentService::NewStub(grpc::CreateChannel(cluster.address(), credentials));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + 5s);
  AttachToken(&context, cluster.Token());
  AgentEndpoint reply;
  REQUIRE(stub->Locate(&context, LocateRequest(), &reply).ok());
  return reply.port();
}

// Waits up to `limit` for the head to hold at most `bound` descriptors;
// returns how many it holds.
int WaitForDescriptorsAtMost(pid_t pid, int bound, std::chrono::milliseconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  int held = OpenDescriptors(pid);
  while (held > bound && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(100ms);
    held = OpenDescriptors(pid);
  }
  return held;
}

}  // namespace

TEST_CASE("a flood of silent connections from many addresses is bounded, and the head answers during and after it",
          "[conn_flood]") {
  Cluster cluster;
  REQUIRE(cluster.StartHead({"--num-cpus", "0"}).exit_code == 0);
  REQUIRE(cluster.StartWorker("w1", {"--num-cpus", "1"}).exit_code == 0);
  const pid_t head = cluster.HeadPid();
  REQUIRE(head > 0);
  const int agent_port = AgentPort(cluster);
  REQUIRE(cluster.Status().nodes_size() == 2);
  const int descriptors_before = OpenDescriptors(head);
  const long rss_before = ResidentKiB(head);

  // 40 addresses x 100 connections to each port: past the per-source bound
  // (64) and, in all, past the per-port bound (1024).
  ConnectionFlood flood;
  const int silent = flood.Open("127.0.0.1", cluster.port(), 40, 50, /*preface=*/false);
  const int prefaced = flood.Open("127.0.0.1", cluster.port(), 40, 50, /*preface=*/true);
  const int agents = flood.Open("127.0.0.1", agent_port, 40, 100, /*preface=*/false);
  INFO("opened " << silent << " silent, " << prefaced << " HTTP/2, " << agents << " agent-port connections");
  REQUIRE(silent + prefaced + agents > 6000);

  // Each port keeps at most 1024 unproven connections: the rest were closed.
  const int during = WaitForDescriptorsAtMost(head, descriptors_before + 2 * 1024 + 64, 15s);
  INFO("head descriptors: " << descriptors_before << " before, " << during << " during the flood");
  CHECK(during <= descriptors_before + 2 * 1024 + 64);
  // What the bounds closed, the flood sees closed (gRPC ends the ones it
  // was handed as soon as it reads their end).
  int closed = 0;
  for (int i = 0; i < 100 && closed < (silent + prefaced + agents) - 2 * 1024 - 64; ++i) {
    closed = flood.ClosedByPeer();
    std::this_thread::sleep_for(100ms);
  }
  CHECK(closed >= (silent + prefaced + agents) - 2 * 1024 - 64);

  // A client with the token, from one of the flood's addresses as well as
  // its own, is served, and the worker that joined before stays ALIVE.
  ClusterStatus status = cluster.Status();
  CHECK(status.nodes_size() == 2);
  CHECK(cluster.StateOf("w1") == ALIVE);
  // A worker that joins during the flood is taken.
  REQUIRE(cluster.StartWorker("w2", {"--num-cpus", "1"}).exit_code == 0);
  CHECK(cluster.StateOf("w2") == ALIVE);

  // After it, the descriptors and the memory come back.
  flood.CloseAll();
  const int after = WaitForDescriptorsAtMost(head, descriptors_before + 16, 20s);
  CHECK(after <= descriptors_before + 16);
  const long rss_after = ResidentKiB(head);
  INFO("head RSS: " << rss_before << " KiB before, " << rss_after << " KiB after");
  CHECK(rss_after < rss_before + 64 * 1024);
  CHECK(cluster.Status().nodes_size() == 3);
}

TEST_CASE("the head's gRPC port accepts again after the head ran out of descriptors", "[conn_flood]") {
  Cluster cluster;
  REQUIRE(cluster.StartHead({"--num-cpus", "0"}).exit_code == 0);
  const pid_t head = cluster.HeadPid();
  REQUIRE(head > 0);
  REQUIRE(cluster.Status().nodes_size() == 1);
  // Leave the head 200 descriptors more than it holds, then flood it from
  // 30 addresses with more than that: accept fails for want of descriptors.
  const int held = OpenDescriptors(head);
  rlimit tight{static_cast<rlim_t>(held + 200), static_cast<rlim_t>(held + 200)};
  rlimit previous{};
  REQUIRE(prlimit(head, RLIMIT_NOFILE, &tight, &previous) == 0);
  ConnectionFlood flood;
  const int opened = flood.Open("127.0.0.1", cluster.port(), 30, 30, /*preface=*/false);
  REQUIRE(opened > 400);
  std::this_thread::sleep_for(1s);
  // Served during the flood: the backlog is shed and the oldest unproven
  // connection ended, so descriptors come free.
  CHECK(cluster.Ctl({"status"}, 20s).exit_code == 0);
  flood.CloseAll();
  // And after it, at once.
  RunResult after = cluster.Ctl({"status"}, 20s);
  INFO(after.err);
  CHECK(after.exit_code == 0);
  CHECK(kill(head, 0) == 0);  // the same head, never restarted
}

TEST_CASE("with TLS, a flood of silent and half-begun connections is bounded and TLS clients are served",
          "[conn_flood][tls]") {
  TestCerts certs;
  REQUIRE(certs.error().empty());
  Cluster cluster;
  std::vector<std::string> flags = certs.HeadFlags();
  flags.insert(flags.end(), {"--num-cpus", "0"});
  REQUIRE(cluster.StartHead(flags).exit_code == 0);
  const std::vector<std::string> ca = {"--tls-ca", certs.ca()};
  REQUIRE(cluster.StartWorker("w1", {"--num-cpus", "1", "--tls-ca", certs.ca()}).exit_code == 0);
  const pid_t head = cluster.HeadPid();
  const int descriptors_before = OpenDescriptors(head);
  ConnectionFlood flood;
  // Silent, and after bytes that are not a TLS hello (the preface): both
  // count until they prove the token, which they never do.
  const int opened = flood.Open("127.0.0.1", cluster.port(), 30, 60, /*preface=*/false) +
                     flood.Open("127.0.0.1", cluster.port(), 30, 60, /*preface=*/true);
  REQUIRE(opened > 3000);
  const int during = WaitForDescriptorsAtMost(head, descriptors_before + 1024 + 64, 15s);
  INFO("head descriptors: " << descriptors_before << " before, " << during << " during the flood");
  CHECK(during <= descriptors_before + 1024 + 64);
  RunResult status = cluster.Ctl({"status", "--tls-ca", certs.ca()}, 20s);
  INFO(status.err);
  CHECK(status.exit_code == 0);
  CHECK(status.out.find("w1") != std::string::npos);
  flood.CloseAll();
  CHECK(WaitForDescriptorsAtMost(head, descriptors_before + 16, 20s) <= descriptors_before + 16);
  CHECK(cluster.Ctl({"status", "--tls-ca", certs.ca()}, 20s).exit_code == 0);
}
