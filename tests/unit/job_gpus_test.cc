// GPUs through HeadCore with fake agents: fractions share devices as in Ray,
// a rank never runs without its share, CPU ranks see no GPU, an adopted rank
// keeps exactly its devices, and a rank that outlived its attempt keeps its
// share until it exits.
#include <catch2/catch.hpp>

#include "head_harness.h"

using namespace clusterd;
using namespace clusterd::testing;

namespace {

SubmitJobRequest GpuJob(Harness& h, double gpus, int workers = 1) {
  SubmitJobRequest request = h.Request(workers, 0, PACK);
  request.mutable_spec()->mutable_resources_per_worker()->clear_amounts();
  (*request.mutable_spec()->mutable_resources_per_worker()->mutable_amounts())[kGpu] = gpus;
  return request;
}

std::string Devices(Harness& h, const std::string& node, int launch) {
  return EnvOf(h.Launches(node).at(launch), 0)["CUDA_VISIBLE_DEVICES"];
}

}  // namespace

TEST_CASE("half-GPU ranks share devices two by two, and the fifth waits instead of running unconfined", "[jobs][gpus]") {
  Harness h;
  h.AddNode("a", 8, 2);
  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i) {
    auto id = h.head->jobs().Submit(GpuJob(h, 0.5));
    REQUIRE(id.ok());
    ids.push_back(*id);
    h.AnswerPort("a", 1000 + i);
  }
  REQUIRE(h.Launches("a").size() == 4);
  REQUIRE(Devices(h, "a", 0) == "0");
  REQUIRE(Devices(h, "a", 1) == "0");
  REQUIRE(Devices(h, "a", 2) == "1");
  REQUIRE(Devices(h, "a", 3) == "1");
  REQUIRE(h.Job(ids[4]).state() == PENDING);
  // One finishes: the waiting one gets its half of device 0.
  h.Exit("a", ids[1], 0, 0, 0);
  h.AnswerPort("a", 2000);
  REQUIRE(h.Job(ids[4]).state() == RUNNING);
  REQUIRE(Devices(h, "a", 4) == "0");
}

TEST_CASE("a rank without GPUs sees none", "[jobs][gpus]") {
  Harness h;
  h.AddNode("a", 2, 2);
  std::string id = h.Submit(1, 1, PACK);
  h.AnswerPort("a", 1);
  auto env = EnvOf(h.Launches("a").at(0), 0);
  REQUIRE(env.count("CUDA_VISIBLE_DEVICES") == 1);
  REQUIRE(env["CUDA_VISIBLE_DEVICES"].empty());
}

TEST_CASE("a rank that outlived its attempt keeps its GPU until it exits", "[jobs][gpus]") {
  Harness h;
  h.AddNode("a", 2, 1);
  auto first = h.head->jobs().Submit(GpuJob(h, 1));
  REQUIRE(first.ok());
  h.AnswerPort("a", 1);
  // The node's stream breaks; its rank runs on. It comes back and says so.
  h.head->OnAgentDisconnected(h.agents["a"].get(), "connection lost");
  REQUIRE(h.Job(*first).state() == FAILED);
  auto conn = std::make_shared<FakeAgentConnection>();
  AgentMessage again;
  auto* r = again.mutable_register_();
  r->set_name("a");
  r->set_name_given(true);
  r->set_address("10.0.0.1");
  r->set_instance_id("a-second");
  (*r->mutable_total()->mutable_amounts())[kCpu] = 2;
  (*r->mutable_total()->mutable_amounts())[kGpu] = 1;
  r->add_gpu_indexes(0);
  auto* live = r->add_live_ranks();
  live->set_job_id(*first);
  live->set_attempt(0);
  live->set_rank(0);
  live->set_pid(4242);
  h.agents["a"] = conn;
  h.head->OnAgentMessage(conn, again);
  // The head stops it; until it is gone, its GPU is not handed out.
  auto second = h.head->jobs().Submit(GpuJob(h, 1));
  REQUIRE(second.ok());
  REQUIRE(h.Job(*second).state() == PENDING);
  h.Exit("a", *first, 0, 0, 0, 15);
  REQUIRE(h.Job(*second).state() == RUNNING);
}

TEST_CASE("a rank adopted after a head restart keeps exactly the GPU it runs on", "[jobs][gpus]") {
  Harness h;
  h.AddNode("a", 4, 2);
  auto first = h.head->jobs().Submit(GpuJob(h, 1));
  h.AnswerPort("a", 1);
  auto second = h.head->jobs().Submit(GpuJob(h, 1));
  h.AnswerPort("a", 2);
  REQUIRE(Devices(h, "a", 1) == "1");
  h.Exit("a", *first, 0, 0, 0);  // device 0 is free again; the second job runs on device 1

  FakeClock clock;
  LogStore logs("");
  HeadCore restarted(&clock, h.config, &h.store, &logs);
  REQUIRE(restarted.Restore().ok());
  auto conn = std::make_shared<FakeAgentConnection>();
  AgentMessage m = RegisterAgain("a", 4, *second, {0}, /*pid=*/777);
  auto* r = m.mutable_register_();
  (*r->mutable_total()->mutable_amounts())[kGpu] = 2;
  r->add_gpu_indexes(0);
  r->add_gpu_indexes(1);
  restarted.OnAgentMessage(conn, m);
  REQUIRE(restarted.jobs().Get(*second)->state() == RUNNING);
  // A new GPU job gets the device nobody uses, not the adopted rank's.
  auto third = restarted.jobs().Submit(GpuJob(h, 1));
  REQUIRE(third.ok());
  for (const auto& sent : conn->sent) {
    if (!sent.has_reserve_port() || sent.reserve_port().job_id() != *third) continue;
    AgentMessage port;
    port.mutable_port_reserved()->set_job_id(*third);
    port.mutable_port_reserved()->set_port(3);
    restarted.OnAgentMessage(conn, port);
  }
  std::string devices;
  for (const auto& sent : conn->sent) {
    if (sent.has_launch() && sent.launch().job_id() == *third) devices = EnvOf(sent.launch(), 0)["CUDA_VISIBLE_DEVICES"];
  }
  REQUIRE(devices == "0");
}

TEST_CASE("a GPU job found INFEASIBLE while the node's only GPU was bad starts once an admin resets it",
          "[jobs][gpus][gpu_health]") {
  Harness h;
  h.AddNode("a", 8, 1);
  AgentMessage beat;
  beat.mutable_heartbeat()->set_seq(1);
  GpuStatus* gpu = beat.mutable_heartbeat()->mutable_usage()->add_gpus();
  gpu->set_index(0);
  gpu->set_fault("3 uncorrectable ECC errors since the driver loaded");
  h.From("a", beat);
  REQUIRE(h.head->nodes().Find("a")->state() == DRAINING);
  auto id = h.head->jobs().Submit(GpuJob(h, 1));
  REQUIRE(id.ok());
  REQUIRE(h.Job(*id).state() == INFEASIBLE);
  ResetGpuRequest reset;
  reset.set_node("a");
  reset.set_gpu(0);
  REQUIRE(h.head->ResetGpu(reset).ok());
  REQUIRE(h.head->nodes().Find("a")->state() == ALIVE);
  REQUIRE(h.Launches("a").size() == 1);
  h.AnswerPort("a", 1);
  CHECK(h.Job(*id).state() == RUNNING);
  CHECK(Devices(h, "a", 0) == "0");
}
