// What this machine has (CPUs in our affinity mask, memory, GPUs) and how
// busy it is, read from the kernel and nvidia-smi.
#pragma once

#include <string>
#include <vector>

#include "cluster.pb.h"

namespace clusterd {

struct ProbedResources {
  double cpus = 0;
  double memory_bytes = 0;
  std::vector<int> gpu_indexes;
};

ProbedResources ProbeResources();
// CPUs this process may run on (sched_getaffinity), at least 1.
int AffinityCpuCount();
// MemTotal of /proc/meminfo, in bytes.
double TotalMemoryBytes();
// The nvidia-smi to ask: the first on PATH, else /usr/bin, /usr/local/bin
// or /usr/local/nvidia/bin (GPU containers); "" when there is none.
std::string FindNvidiaSmi();
// GPU indexes nvidia-smi lists; empty when it is absent or fails.
std::vector<int> NvidiaGpuIndexes();
// Load average and memory in use, for heartbeats.
NodeUsage ReadUsage();

}  // namespace clusterd
