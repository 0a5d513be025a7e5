// A stand-in nvidia-smi for the tests of GPU use and health on machines
// without GPUs: it answers the agent's start-up listing and the probe's
// queries (daemon/agent/gpu_probe.h) for two GPUs, 0 and 1, and fails on
// anything else it is asked, so that a query the agent starts making shows.
#pragma once

#include <sys/stat.h>

#include <fstream>
#include <string>

#include <catch2/catch.hpp>

namespace clusterd::testing {

// Writes `folder`/nvidia-smi (the folder is made), whose answer to the
// probe's --query-gpu is `query_gpu`: shell that prints one CSV line per
// GPU (index, bus id, utilization %, memory used MiB, memory total MiB,
// uncorrectable ECC errors, retired pages pending) and may read files
// beside it. Returns the folder, to put first on the agent's PATH.
inline std::string WriteStandInNvidiaSmi(const std::string& folder, const std::string& query_gpu) {
  REQUIRE(mkdir(folder.c_str(), 0755) == 0);
  const std::string path = folder + "/nvidia-smi";
  std::ofstream(path) << R"(#!/bin/sh
case "$1" in
  --query-gpu=index) echo 0; echo 1; exit 0 ;;
  --query-remapped-rows=*) echo "00000000:18:00.0, No, No"; echo "00000000:3B:00.0, No, No"; exit 0 ;;
  --query-gpu=*) ;;
  *) echo "stand-in nvidia-smi: unexpected $*"; exit 2 ;;
esac
)" << query_gpu;
  REQUIRE(chmod(path.c_str(), 0755) == 0);
  return folder;
}

}  // namespace clusterd::testing
