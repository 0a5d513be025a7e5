// GPU health on a real head and agent, with a stand-in nvidia-smi that
// prints what the real one prints: a GPU with uncorrectable ECC errors
// leaves the offer, a node with every GPU bad drains, an admin's
// `clusterctl node NODE --reset-gpu N` puts them back, and /metrics shows
// each GPU's use and health.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include "harness.h"
#include "http_get.h"
#include "stand_in_nvidia_smi.h"
#include "job_json.h"
#include "jobs_harness.h"
#include "user_tokens.h"

using namespace clusterd;
using namespace clusterd::testing;
using namespace std::chrono_literals;

namespace {

// The probe's answer, from the GPUs' state in the file `state` beside the
// stand-in: healthy, ecc0 (GPU 0 has uncorrectable ECC errors), or allbad
// (GPU 0 that, GPU 1 off the bus).
constexpr const char* kQueryGpu = R"(state=$(cat "$(dirname "$0")/state" 2>/dev/null)
case "$state" in
  ecc0)
    echo "0, 00000000:18:00.0, 37, 2048, 81559, 3, No"
    echo "1, 00000000:3B:00.0, 0, 4, 81559, 0, No" ;;
  allbad)
    echo "0, 00000000:18:00.0, 0, 4, 81559, 3, No"
    echo "Unable to determine the device handle for GPU0000:3B:00.0: Unknown Error"
    exit 15 ;;
  *)
    echo "0, 00000000:18:00.0, 37, 2048, 81559, 0, No"
    echo "1, 00000000:3B:00.0, 0, 4, 81559, 0, No" ;;
esac
)";

NodeInfo NodeNamed(Cluster& cluster, const std::string& name) {
  const ClusterStatus status = cluster.Status();
  for (const NodeInfo& node : status.nodes()) {
    if (node.name() == name) return node;
  }
  return NodeInfo();
}

bool Has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("a GPU with errors leaves the offer, all bad drains the node, --reset-gpu puts them back",
          "[gpu_health]") {
  Cluster cluster;
  const std::string bin = cluster.temp_dir() + "/stand-in";
  WriteStandInNvidiaSmi(bin, kQueryGpu);
  auto set_state = [&](const std::string& state) { std::ofstream(bin + "/state") << state << "\n"; };
  set_state("healthy");

  const int dashboard = FreePort();
  const std::vector<std::string> timing = {"--heartbeat-ms", "200", "--node-timeout-ms", "2000"};
  std::vector<std::string> head = {"--num-cpus", "1", "--num-gpus", "0", "--dashboard-port", std::to_string(dashboard)};
  head.insert(head.end(), timing.begin(), timing.end());
  RunResult started = cluster.StartHead(head);
  INFO(started.err);
  REQUIRE(started.exit_code == 0);
  // The worker finds its GPUs with the stand-in, as it would the real one.
  std::vector<std::string> worker = {CLUSTERD_BIN, "start", "--address", cluster.address(), "--temp-dir",
                                     cluster.temp_dir(), "--node-name", "gpu1", "--num-cpus", "2",
                                     "--gpu-probe-interval-ms", "100"};
  worker.insert(worker.end(), timing.begin(), timing.end());
  RunResult joined = Run(worker, {{"PATH", bin + ":" + std::string(getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin")}});
  INFO(joined.err);
  REQUIRE(joined.exit_code == 0);
  const std::string token = cluster.Token();

  // Healthy: both GPUs offered, their use read.
  REQUIRE(WaitFor([&] { return NodeNamed(cluster, "gpu1").usage().gpus_size() == 2; }, 20s, 100ms));
  std::string metrics = HttpGet(dashboard, "/metrics", token);
  INFO(metrics.substr(0, 400));
  CHECK(Has(metrics, "clusterd_gpu_utilization{node=\"gpu1\",node_id=\""));
  CHECK(Has(metrics, "gpu=\"0\"} 0.37\n"));
  CHECK(Has(metrics, "gpu=\"0\"} " + std::to_string(2048LL * 1024 * 1024) + "\n"));  // memory used
  CHECK(Has(metrics, "# TYPE clusterd_gpu_healthy gauge"));
  const std::string healthy_line = "clusterd_gpu_healthy{node=\"gpu1\",node_id=\"" + NodeNamed(cluster, "gpu1").node_id();
  CHECK(Has(metrics, healthy_line + "\",gpu=\"0\"} 1\n"));
  CHECK(Has(metrics, healthy_line + "\",gpu=\"1\"} 1\n"));

  // GPU 0 reports uncorrectable ECC errors: it leaves the offer, with the reason shown.
  set_state("ecc0");
  REQUIRE(WaitFor([&] { return NodeNamed(cluster, "gpu1").bad_gpus_size() == 1; }, 20s, 100ms));
  NodeInfo node = NodeNamed(cluster, "gpu1");
  CHECK(node.bad_gpus(0).index() == 0);
  CHECK(node.bad_gpus(0).fault() == "3 uncorrectable ECC errors since the driver loaded");
  CHECK(node.state() == ALIVE);
  RunResult shown = cluster.Ctl({"node", "gpu1"});
  INFO(shown.err);
  CHECK(Has(shown.out, "    0: OUT since "));
  CHECK(Has(shown.out, ": 3 uncorrectable ECC errors since the driver loaded (back with `clusterctl node gpu1 "
                       "--reset-gpu 0`)"));
  CHECK(Has(shown.out, "    1: ok, 0% busy"));
  CHECK(Has(cluster.Ctl({"status"}).out, "GPU 0 out: 3 uncorrectable ECC errors since the driver loaded"));
  CHECK(Has(HttpGet(dashboard, "/metrics", token), healthy_line + "\",gpu=\"0\"} 0\n"));

  // A 1-GPU job goes to the other device; one that needs both waits.
  const std::string seen = cluster.temp_dir() + "/devices";
  std::string one = WriteJobFile(cluster, "one-gpu",
                                 "entrypoint: echo $CUDA_VISIBLE_DEVICES > " + seen + "\n"
                                 "resources_per_worker: {CPU: 1, GPU: 1}\n");
  JobInfo ended = WaitEnd(cluster, Submit(cluster, one));
  REQUIRE(ended.state() == SUCCEEDED);
  CHECK(Slurp(seen) == "1\n");
  std::string both = WriteJobFile(cluster, "two-gpus", "entrypoint: echo both\nresources_per_worker: {CPU: 1, GPU: 2}\n");
  const std::string waiting = Submit(cluster, both);
  std::this_thread::sleep_for(1s);
  const JobInfo pending = GetJob(cluster, waiting);
  CHECK(pending.state() == PENDING);
  CHECK(Has(pending.reason(), "waiting for resources: needs 1 x {1 CPU, 2 GPU}"));
  REQUIRE(cluster.Ctl({"stop", waiting}).exit_code == 0);

  // Every GPU bad: the node drains, saying why.
  set_state("allbad");
  REQUIRE(WaitFor([&] { return NodeNamed(cluster, "gpu1").state() == DRAINING; }, 20s, 100ms));
  node = NodeNamed(cluster, "gpu1");
  CHECK(Has(node.state_reason(), "every GPU is out of the offer for a fault"));
  CHECK(Has(node.state_reason(), "GPU 1: fallen off the bus (nvidia-smi: Unknown Error)"));

  // Only an admin puts a GPU back.
  const std::string alice = AddUser(cluster, "alice");
  RunResult refused = cluster.Ctl({"node", "gpu1", "--reset-gpu", "0", "--token", alice});
  CHECK(refused.exit_code != 0);
  CHECK(refused.err == "clusterctl: node --reset-gpu is for admins; alice is not one\n");
  CHECK(NodeNamed(cluster, "gpu1").bad_gpus_size() == 2);

  // Repaired, then reset: the node takes work again, on both GPUs.
  set_state("healthy");
  std::this_thread::sleep_for(500ms);  // a healthy reading alone puts nothing back
  CHECK(NodeNamed(cluster, "gpu1").state() == DRAINING);
  RunResult reset = cluster.Ctl({"node", "gpu1", "--reset-gpu", "0"});
  INFO(reset.err);
  REQUIRE(reset.exit_code == 0);
  CHECK(reset.out == "GPU 0 of node gpu1 is back in the offer (it was out for: 3 uncorrectable ECC errors since "
                     "the driver loaded).\n");
  CHECK(NodeNamed(cluster, "gpu1").state() == ALIVE);
  REQUIRE(cluster.Ctl({"node", "gpu1", "--reset-gpu", "1"}).exit_code == 0);
  RunResult again = cluster.Ctl({"node", "gpu1", "--reset-gpu", "1"});
  CHECK(again.err == "clusterctl: GPU 1 of node gpu1 is not out of the offer (out: none)\n");
  CHECK(WaitEnd(cluster, Submit(cluster, both)).state() == SUCCEEDED);
  metrics = HttpGet(dashboard, "/metrics", token);
  CHECK(Has(metrics, healthy_line + "\",gpu=\"0\"} 1\n"));
  CHECK(Has(metrics, healthy_line + "\",gpu=\"1\"} 1\n"));
}
