// The GPU probe runs nvidia-smi as a child with a timeout: a script stands
// in for it, one that answers and one that hangs.
#include "daemon/agent/gpu_probe.h"

#include <catch2/catch.hpp>

#include <chrono>
#include <string>

#include "temp_tree.h"

namespace clusterd {
namespace {

constexpr const char* kTwoGpus =
    "#!/bin/sh\n"
    "case \"$1\" in\n"
    "  --query-remapped-rows=*) echo '00000000:3B:00.0, Yes, No'; exit 0 ;;\n"
    "esac\n"
    "echo '0, 00000000:18:00.0, 50, 100, 1000, 0, No'\n"
    "echo '1, 00000000:3B:00.0, 0, 4, 1000, 0, No'\n";

TEST_CASE("a probe reads each GPU's use and faults from nvidia-smi", "[gpu_probe]") {
  testing::TempTree tree;
  tree.Write("bin/nvidia-smi", kTwoGpus, 0755);
  GpuProbe::Options options;
  options.nvidia_smi = tree.Path("bin/nvidia-smi");
  options.interval = 1'000'000;
  GpuProbe probe(options);
  CHECK(probe.Latest().empty());
  probe.ProbeNow();
  auto latest = probe.Latest();
  REQUIRE(latest.size() == 2);
  CHECK(latest[0].utilization() == Approx(0.5));
  CHECK(latest[0].fault().empty());
  CHECK(latest[1].fault() == "a row remapping is pending: the GPU needs a reset");
}

TEST_CASE("a GPU the probe saw and sees no more has fallen off the bus", "[gpu_probe]") {
  testing::TempTree tree;
  tree.Write("bin/nvidia-smi", kTwoGpus, 0755);
  GpuProbe::Options options;
  options.nvidia_smi = tree.Path("bin/nvidia-smi");
  options.interval = 1'000'000;
  GpuProbe probe(options);
  probe.ProbeNow();
  tree.Write("bin/nvidia-smi", "#!/bin/sh\necho '0, 00000000:18:00.0, 50, 100, 1000, 0, No'\n", 0755);
  probe.ProbeNow();
  auto latest = probe.Latest();
  REQUIRE(latest.size() == 2);
  CHECK(latest[1].fault() == "fallen off the bus: nvidia-smi lists it no more");

  // Not so for GPUs named by --num-gpus: nvidia-smi's list is not theirs.
  options.watch_missing = false;
  GpuProbe named(options);
  named.ProbeNow();
  CHECK(named.Latest().size() == 1);
}

TEST_CASE("a hung nvidia-smi is killed at the timeout and the last reading stands", "[gpu_probe]") {
  testing::TempTree tree;
  tree.Write("bin/nvidia-smi", kTwoGpus, 0755);
  GpuProbe::Options options;
  options.nvidia_smi = tree.Path("bin/nvidia-smi");
  options.interval = 1'000'000;
  options.timeout = 300'000;
  GpuProbe probe(options);
  probe.ProbeNow();
  tree.Write("bin/nvidia-smi", "#!/bin/sh\nsleep 60\n", 0755);
  const auto start = std::chrono::steady_clock::now();
  probe.ProbeNow();
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
  CHECK(probe.Latest().size() == 2);

  bool timed_out = false;
  NvidiaSmiRun run = RunWithTimeout(tree.Path("bin/nvidia-smi"), {}, 200'000, nullptr, &timed_out);
  CHECK(timed_out);
  CHECK(run.exit_code == -1);
}

TEST_CASE("a heartbeat's GPU part is cut to fit its datagram", "[gpu_probe]") {
  testing::TempTree tree;
  std::string script = "#!/bin/sh\ncase \"$1\" in --query-remapped-rows=*) exit 0 ;; esac\n";
  for (int i = 0; i < 8; ++i) {
    script += "echo 'Unable to determine the device handle for GPU0000:0" + std::to_string(i) + ":00.0: " +
              std::string(300, 'x') + "'\n";
  }
  tree.Write("bin/nvidia-smi", script, 0755);
  GpuProbe::Options options;
  options.nvidia_smi = tree.Path("bin/nvidia-smi");
  options.interval = 1'000'000;
  options.expected = {0, 1, 2, 3, 4, 5, 6, 7};
  GpuProbe probe(options);
  probe.ProbeNow();
  REQUIRE(probe.Latest().size() == 8);
  NodeUsage usage;
  usage.set_cpu_load(1.5);
  probe.AddTo(&usage, 1000);
  CHECK(usage.gpus_size() == 8);
  CHECK(usage.ByteSizeLong() <= 1000);
  for (const GpuStatus& gpu : usage.gpus()) CHECK(gpu.fault().rfind("fallen off the bus", 0) == 0);
}

}  // namespace
}  // namespace clusterd
