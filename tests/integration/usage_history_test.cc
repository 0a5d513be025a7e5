// The usage history over real HTTP: a head and a worker whose GPUs a
// stand-in nvidia-smi reports, sampled every 200 ms; /api/usage/nodes/NODE
// and /api/usage/cluster answer with what the worker reported (its GPUs,
// its running ranks), since_unix_ms narrows them, the token is required
// and an unknown node is a 404 naming it.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "harness.h"
#include "http_get.h"
#include "stand_in_nvidia_smi.h"
#include "job_json.h"
#include "jobs_harness.h"

using namespace clusterd;
using namespace clusterd::testing;
using namespace std::chrono_literals;

namespace {

// Two GPUs: 0 at 37% with 2048 MiB used, 1 idle with 8 MiB; 81559 MiB each.
constexpr const char* kQueryGpu = R"(echo "0, 00000000:18:00.0, 37, 2048, 81559, 0, No"
echo "1, 00000000:3B:00.0, 0, 8, 81559, 0, No"
)";

constexpr int64_t kMiB = 1 << 20;

struct Reply {
  int status = 0;
  nlohmann::json body;
};

Reply Get(int port, const std::string& target, const std::string& token) {
  const std::string response = HttpGet(port, target, token);
  INFO(target << ": " << response.substr(0, 600));
  REQUIRE(response.rfind("HTTP/1.1 ", 0) == 0);
  Reply reply;
  reply.status = std::stoi(response.substr(9, 3));
  const size_t body = response.find("\r\n\r\n");
  REQUIRE(body != std::string::npos);
  reply.body = nlohmann::json::parse(response.substr(body + 4));
  return reply;
}

}  // namespace

TEST_CASE("the head keeps each node's and the cluster's use, served at /api/usage", "[usage_history]") {
  Cluster cluster;
  const std::string bin = cluster.temp_dir() + "/stand-in";
  WriteStandInNvidiaSmi(bin, kQueryGpu);

  const int dashboard = FreePort();
  RunResult started = cluster.StartHead({"--num-cpus", "1", "--num-gpus", "0", "--dashboard-port",
                                         std::to_string(dashboard), "--heartbeat-ms", "100",
                                         "--usage-history-interval-ms", "200"});
  INFO(started.err);
  REQUIRE(started.exit_code == 0);
  std::vector<std::string> worker = {CLUSTERD_BIN, "start", "--address", cluster.address(), "--temp-dir",
                                     cluster.temp_dir(), "--node-name", "gpu1", "--num-cpus", "2",
                                     "--heartbeat-ms", "100", "--gpu-probe-interval-ms", "100"};
  RunResult joined = Run(worker, {{"PATH", bin + ":" + std::string(getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin")}});
  INFO(joined.err);
  REQUIRE(joined.exit_code == 0);
  const std::string token = cluster.Token();

  // The token is required, as for every /api read.
  CHECK(HttpGet(dashboard, "/api/usage/cluster").rfind("HTTP/1.1 401", 0) == 0);
  CHECK(HttpGet(dashboard, "/api/usage/nodes/gpu1", "wrong").rfind("HTTP/1.1 401", 0) == 0);

  // A job runs on gpu1 while the history samples it.
  const std::string file = WriteJobFile(cluster, "sleeper",
                                        "entrypoint: sleep 30\nresources_per_worker: {CPU: 2}\n");
  RunResult submitted = cluster.Ctl({"submit", file, "--json"});
  INFO(submitted.err);
  REQUIRE(submitted.exit_code == 0);
  const std::string job = SubmittedJobId(submitted);

  // Samples with both GPUs read and the rank running.
  nlohmann::json node;
  REQUIRE(WaitFor([&] {
    Reply reply = Get(dashboard, "/api/usage/nodes/gpu1", token);
    if (reply.status != 200) return false;
    node = reply.body;
    int with_rank = 0;
    for (const auto& sample : node["samples"]) {
      if (sample["gpus"].size() == 2 && sample["running_ranks"] == 1) ++with_rank;
    }
    return with_rank >= 3;
  }, 30s, 200ms));
  INFO(node.dump().substr(0, 2000));
  CHECK(node["name"] == "gpu1");
  CHECK(node["interval_ms"] == 200);
  CHECK(node["cpus"] == 2);
  CHECK(node["gpus"] == 2);
  CHECK(node["memory_total_bytes"].get<int64_t>() > 0);
  const nlohmann::json& samples = node["samples"];
  int64_t previous = 0;
  // A sample taken before the agent's first report of its use holds zeros
  // (its running ranks may come first, with a heartbeat).
  bool reported = false;
  for (const auto& sample : samples) {
    const int64_t t = sample["t_unix_ms"];
    CHECK(t > previous);  // the spacing is the unit tests' (fake clock): here a tick may come late
    previous = t;
    CHECK(sample["cpu_load"].get<double>() >= 0);
    const int64_t memory = sample["memory_used_bytes"].get<int64_t>();
    if (reported) CHECK(memory > 0);  // once it has reported, every sample holds its use
    reported = reported || memory > 0;
  }
  CHECK(reported);
  const nlohmann::json& last = samples.back();
  REQUIRE(last["gpus"].size() == 2);
  CHECK(last["gpus"][0]["index"] == 0);
  CHECK(last["gpus"][0]["utilization"].get<double>() == Approx(0.37).margin(0.002));
  CHECK(last["gpus"][0]["memory_used_bytes"] == 2048 * kMiB);
  CHECK(last["gpus"][0]["memory_total_bytes"] == 81559 * kMiB);
  CHECK(last["gpus"][1]["index"] == 1);
  CHECK(last["gpus"][1]["utilization"] == 0);
  CHECK(last["gpus"][1]["memory_used_bytes"] == 8 * kMiB);

  // The same node by its id; since_unix_ms gives what came after it.
  const std::string id = node["node_id"];
  Reply by_id = Get(dashboard, "/api/usage/nodes/" + id, token);
  CHECK(by_id.status == 200);
  CHECK(by_id.body["name"] == "gpu1");
  const int64_t since = samples[samples.size() - 2]["t_unix_ms"];
  Reply newer = Get(dashboard, "/api/usage/nodes/gpu1?since_unix_ms=" + std::to_string(since), token);
  REQUIRE(newer.status == 200);
  REQUIRE(!newer.body["samples"].empty());
  for (const auto& sample : newer.body["samples"]) CHECK(sample["t_unix_ms"].get<int64_t>() > since);
  CHECK(newer.body["samples"][0]["t_unix_ms"] == samples.back()["t_unix_ms"]);

  // The cluster's totals: the head's node and gpu1.
  Reply totals = Get(dashboard, "/api/usage/cluster", token);
  REQUIRE(totals.status == 200);
  INFO(totals.body.dump().substr(0, 2000));
  CHECK(totals.body["interval_ms"] == 200);
  const nlohmann::json& now = totals.body["samples"].back();
  CHECK(now["nodes_alive"] == 2);
  CHECK(now["cpus"] == 3);
  CHECK(now["running_ranks"] == 1);
  CHECK(now["gpu_utilization_mean"].get<double>() == Approx(0.185));
  CHECK(now["gpu_memory_used_bytes"] == 2056 * kMiB);
  CHECK(now["gpu_memory_total_bytes"] == 2 * 81559 * kMiB);
  CHECK(now["memory_total_bytes"].get<int64_t>() > 0);
  CHECK(now["memory_used_bytes"].get<int64_t>() > 0);
  CHECK(now["cpu_load"].get<double>() >= 0);

  // Bad requests: a clear error each, and the head serves on.
  Reply unknown = Get(dashboard, "/api/usage/nodes/nosuch", token);
  CHECK(unknown.status == 404);
  CHECK(unknown.body["error"].get<std::string>().find("\"nosuch\"") != std::string::npos);
  Reply bad_since = Get(dashboard, "/api/usage/cluster?since_unix_ms=soon", token);
  CHECK(bad_since.status == 400);
  CHECK(bad_since.body["error"].get<std::string>().find("since_unix_ms=soon") != std::string::npos);
  CHECK(Get(dashboard, "/api/usage/nodes/", token).status == 400);
  CHECK(Get(dashboard, "/api/usage/cluster", token).status == 200);

  REQUIRE(cluster.Ctl({"stop", job}).exit_code == 0);
}
