#include <catch2/catch.hpp>

#include <string>

#include <nlohmann/json.hpp>

#include "daemon/http/usage_api.h"
#include "head_harness.h"

using namespace clusterd;
using namespace clusterd::testing;

namespace {

nlohmann::json Body(const HttpReply& reply) { return nlohmann::json::parse(reply.body); }

}  // namespace

TEST_CASE("usage api: the head samples at its ticks on its clock, a node by id or percent-encoded name",
          "[usage_history]") {
  QuietLogs quiet;
  Harness h;
  h.AddNode("gpu one", 4);
  h.AddNode("w2", 2);
  h.Advance(25'000);  // ticks every 500 ms: samples at 0, 10 and 20 s
  UsageApi api(h.head.get());

  HttpReply reply = api.Answer("/api/usage/nodes/gpu%20one");
  INFO(reply.body);
  REQUIRE(reply.status == 200);
  nlohmann::json node = Body(reply);
  CHECK(node["name"] == "gpu one");
  CHECK(node["cpus"] == 4);
  CHECK(node["interval_ms"] == 10000);
  REQUIRE(node["samples"].size() == 3);
  const int64_t first = node["samples"][0]["t_unix_ms"];
  CHECK(node["samples"][1]["t_unix_ms"] == first + 10'000);
  CHECK(node["samples"][2]["t_unix_ms"] == first + 20'000);
  CHECK(node["samples"][0]["gpus"].empty());

  // By id, and only what came after since_unix_ms.
  const std::string id = node["node_id"];
  nlohmann::json newer = Body(api.Answer("/api/usage/nodes/" + id + "?since_unix_ms=" + std::to_string(first)));
  CHECK(newer["name"] == "gpu one");
  CHECK(newer["samples"].size() == 2);

  nlohmann::json cluster = Body(api.Answer("/api/usage/cluster"));
  REQUIRE(cluster["samples"].size() == 3);
  CHECK(cluster["samples"][2]["nodes_alive"] == 2);
  CHECK(cluster["samples"][2]["cpus"] == 6);
  CHECK(cluster["samples"][2]["gpu_utilization_mean"] == 0);
  // No agent has reported its CPUs' busy share: null, not 0.
  CHECK(node["samples"][2]["cpu_utilization"].is_null());
  CHECK(cluster["samples"][2]["cpu_utilization"].is_null());

  // w2 reports it; "gpu one" does not: the cluster's is w2's alone.
  for (int i = 0; i < 20; ++i) {
    h.clock.AdvanceMillis(500);
    AgentMessage plain, measured;
    plain.mutable_heartbeat()->set_seq(1);
    measured.mutable_heartbeat()->set_seq(1);
    measured.mutable_heartbeat()->mutable_usage()->set_cpu_utilization(0.5);
    h.From("gpu one", plain);
    h.From("w2", measured);
    h.head->Tick();
  }
  nlohmann::json w2 = Body(api.Answer("/api/usage/nodes/w2"));
  REQUIRE(w2["samples"].size() == 4);
  CHECK(w2["samples"][2]["cpu_utilization"].is_null());
  CHECK(w2["samples"][3]["cpu_utilization"] == 0.5);
  CHECK(Body(api.Answer("/api/usage/nodes/gpu%20one"))["samples"][3]["cpu_utilization"].is_null());
  cluster = Body(api.Answer("/api/usage/cluster"));
  REQUIRE(cluster["samples"].size() == 4);
  CHECK(cluster["samples"][3]["cpu_utilization"] == 0.5);
}

TEST_CASE("usage api: an unknown node is a 404 naming it, a bad request a 400 saying what is wrong",
          "[usage_history]") {
  QuietLogs quiet;
  Harness h;
  h.AddNode("w1", 2);
  h.Advance(1000);
  UsageApi api(h.head.get());
  CHECK(UsageApi::IsPath("/api/usage/cluster"));
  CHECK(UsageApi::IsPath("/api/usage/nodes/w1"));
  CHECK_FALSE(UsageApi::IsPath("/api/usage"));
  CHECK_FALSE(UsageApi::IsPath("/api/usage/clusters"));

  HttpReply unknown = api.Answer("/api/usage/nodes/nosuch");
  CHECK(unknown.status == 404);
  CHECK(Body(unknown)["error"].get<std::string>().find("\"nosuch\"") != std::string::npos);
  HttpReply bad_escape = api.Answer("/api/usage/nodes/w%2");
  CHECK(bad_escape.status == 400);
  CHECK(Body(bad_escape)["error"].get<std::string>().find("percent-encoded") != std::string::npos);
  CHECK(api.Answer("/api/usage/nodes/w%zz1").status == 400);
  CHECK(api.Answer("/api/usage/nodes/").status == 400);
  CHECK(api.Answer("/api/usage/nodes").status == 400);
  HttpReply bad_since = api.Answer("/api/usage/cluster?since_unix_ms=12x");
  CHECK(bad_since.status == 400);
  CHECK(Body(bad_since)["error"].get<std::string>().find("since_unix_ms=12x") != std::string::npos);
  CHECK(api.Answer("/api/usage/nodes/w1").status == 200);

  // A node the head knows that has not been sampled yet: its record, no samples.
  h.AddNode("late", 3);
  HttpReply late = api.Answer("/api/usage/nodes/late");
  REQUIRE(late.status == 200);
  CHECK(Body(late)["name"] == "late");
  CHECK(Body(late)["cpus"] == 3);
  CHECK(Body(late)["samples"].empty());
}
