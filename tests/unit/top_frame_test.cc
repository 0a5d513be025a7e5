// What `clusterctl top` draws for a given cluster and window: exact text,
// cut to the width and fitted to the height.
#include <catch2/catch.hpp>

#include "cli/top_frame.h"
#include "common/resources.h"

using namespace clusterd;
using namespace clusterd::cli;

namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;
constexpr int64_t kNow = 1700000000000;  // 2023-11-14 22:13:20 UTC

NodeInfo Node(const std::string& name, double cpus, double gpus, double memory_gib) {
  NodeInfo node;
  node.set_name(name);
  node.set_state(ALIVE);
  auto& total = *node.mutable_total()->mutable_amounts();
  total[kCpu] = cpus;
  total[kMemory] = memory_gib * kGiB;
  if (gpus > 0) total[kGpu] = gpus;
  *node.mutable_available() = node.total();
  return node;
}

TopSnapshot Cluster() {
  TopSnapshot snapshot;
  snapshot.now_unix_ms = kNow;
  ClusterStatus& status = snapshot.status;
  status.set_head_address("10.0.0.1:6379");
  status.mutable_node_counts()->set_alive(2);
  (*status.mutable_used()->mutable_amounts())[kCpu] = 3;
  (*status.mutable_used()->mutable_amounts())[kGpu] = 1;

  NodeInfo head = Node("head", 4, 0, 16);
  head.set_is_head(true);
  head.mutable_usage()->set_cpu_load(1.0);
  head.mutable_usage()->set_memory_used_bytes(4 * kGiB);
  head.mutable_usage()->set_running_ranks(2);
  *status.add_nodes() = head;

  NodeInfo gpu = Node("gpu-1", 8, 2, 32);
  (*gpu.mutable_available()->mutable_amounts())[kGpu] = 1;
  gpu.mutable_usage()->set_cpu_load(9.5);  // above its CPUs: the bar is full, not longer
  gpu.mutable_usage()->set_memory_used_bytes(8 * kGiB);
  gpu.mutable_usage()->set_running_ranks(1);
  *status.add_nodes() = gpu;

  TopJob job;
  job.info.set_job_id("job-0001");
  job.info.mutable_spec()->set_name("mnist");
  job.info.mutable_spec()->set_num_workers(2);
  job.info.set_state(RUNNING);
  job.info.add_attempts()->set_start_unix_ms(kNow - 62000);
  MetricRecord record;
  record.set_index(57);
  (*record.mutable_values())["loss"] = 0.3141592;
  (*record.mutable_values())["accuracy"] = 0.91;
  job.latest = record;
  snapshot.jobs.push_back(job);
  snapshot.running_jobs = 1;
  return snapshot;
}

std::string Joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& line : lines) out += line + "\n";
  return out;
}

}  // namespace

TEST_CASE("a usage bar is filled in proportion, full past its total, empty without one", "[cli][top]") {
  CHECK(UsageBar(1, 4, 10) == "[|||       ]");
  CHECK(UsageBar(0, 4, 10) == "[          ]");
  CHECK(UsageBar(9.5, 8, 10) == "[||||||||||]");
  CHECK(UsageBar(3, 0, 4) == "[    ]");
  CHECK(UsageBar(-1, 4, 4) == "[    ]");
}

TEST_CASE("clusterctl top draws nodes with usage bars and running jobs with their latest metrics", "[cli][top]") {
  const std::string frame = Joined(RenderTopFrame(Cluster(), TopSize{}));
  CHECK(frame ==
        "clusterd top - 22:13:20 UTC - head 10.0.0.1:6379 - 2 nodes (2 alive, 0 draining, 0 dead) - 1 job running - "
        "in use 3 CPU, 1 GPU\n"
        "\n"
        "NODE    STATE  CPU LOAD            MEMORY                         GPUS              RANKS\n"
        "head *  ALIVE  [|||       ] 1.0/4  [|||       ] 4.0 GiB/16.0 GiB  -                 2\n"
        "gpu-1   ALIVE  [||||||||||] 9.5/8  [|||       ] 8.0 GiB/32.0 GiB  [|||||     ] 1/2  1\n"
        "\n"
        "JOB       NAME   STATE    WORKERS  ATTEMPTS  RUNNING  LATEST METRICS\n"
        "job-0001  mnist  RUNNING  2        1         1m02s    #57 accuracy=0.91 loss=0.3142\n");
}

TEST_CASE("clusterctl top shows a name's control characters as '?'", "[cli][top]") {
  TopSnapshot snapshot = Cluster();
  snapshot.jobs[0].info.mutable_spec()->set_name("x\x1b[2Jy");
  const std::string frame = Joined(RenderTopFrame(snapshot, TopSize{}));
  CHECK(frame.find("job-0001  x?[2Jy  RUNNING") != std::string::npos);
  CHECK(frame.find('\x1b') == std::string::npos);
}

TEST_CASE("clusterctl top shows each GPU's use where a node reports it", "[cli][top][gpu_health]") {
  TopSnapshot snapshot = Cluster();
  NodeInfo* gpu = snapshot.status.mutable_nodes(1);
  GpuStatus* busy = gpu->mutable_usage()->add_gpus();
  busy->set_index(0);
  busy->set_usage_known(true);
  busy->set_utilization(0.874);
  GpuStatus* bad = gpu->mutable_usage()->add_gpus();
  bad->set_index(1);
  bad->set_fault("uncorrectable ECC errors");
  const std::string frame = Joined(RenderTopFrame(snapshot, TopSize{}));
  CHECK(frame.find("GPUS              GPU USE        RANKS\n") != std::string::npos);
  CHECK(frame.find("-                 -              2\n") != std::string::npos);
  CHECK(frame.find("[|||||     ] 1/2  0:87% 1:FAULT  1\n") != std::string::npos);
}

TEST_CASE("clusterctl top cuts lines to the window's width and fits its height", "[cli][top]") {
  TopSnapshot snapshot = Cluster();
  for (int i = 2; i < 30; ++i) {
    NodeInfo* node = snapshot.status.add_nodes();
    *node = Node("node-" + std::to_string(i), 1, 0, 1);
  }
  snapshot.status.mutable_node_counts()->set_alive(30);
  const std::vector<std::string> lines = RenderTopFrame(snapshot, TopSize{40, 12});
  // 12 rows: the title, a blank line, the nodes' head, 5 nodes and a line
  // for the rest, a blank line, the jobs' head and the job.
  CHECK(Joined(lines) ==
        "clusterd top - 22:13:20 UTC - head 10.0.\n"
        "\n"
        "NODE    STATE  CPU LOAD            MEMOR\n"
        "head *  ALIVE  [|||       ] 1.0/4  [||| \n"
        "gpu-1   ALIVE  [||||||||||] 9.5/8  [||| \n"
        "node-2  ALIVE  [          ] 0.0/1  [    \n"
        "node-3  ALIVE  [          ] 0.0/1  [    \n"
        "node-4  ALIVE  [          ] 0.0/1  [    \n"
        "... 25 more nodes\n"
        "\n"
        "JOB       NAME   STATE    WORKERS  ATTEM\n"
        "job-0001  mnist  RUNNING  2        1    \n");
}
