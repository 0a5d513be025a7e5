#include "daemon/agent/resource_probe.h"

#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace clusterd {

namespace {

// A /proc/meminfo field in bytes (the file gives kB); 0 when absent.
double MeminfoBytes(const std::string& field) {
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) {
      std::istringstream values(line.substr(field.size() + 1));
      double kb = 0;
      values >> kb;
      return kb * 1024;
    }
  }
  return 0;
}

}  // namespace

int AffinityCpuCount() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    int count = CPU_COUNT(&set);
    if (count > 0) return count;
  }
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  return online > 0 ? static_cast<int>(online) : 1;
}

double TotalMemoryBytes() { return MeminfoBytes("MemTotal"); }

std::vector<int> NvidiaGpuIndexes() {
  std::vector<int> out;
  if (access("/usr/bin/nvidia-smi", X_OK) != 0 && access("/usr/local/bin/nvidia-smi", X_OK) != 0) {
    return out;
  }
  FILE* pipe = popen("nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null", "r");
  if (!pipe) return out;
  char line[64];
  while (fgets(line, sizeof line, pipe)) {
    int index = -1;
    if (sscanf(line, "%d", &index) == 1 && index >= 0) out.push_back(index);
  }
  pclose(pipe);
  return out;
}

ProbedResources ProbeResources() {
  ProbedResources probed;
  probed.cpus = AffinityCpuCount();
  probed.memory_bytes = TotalMemoryBytes();
  probed.gpu_indexes = NvidiaGpuIndexes();
  return probed;
}

NodeUsage ReadUsage() {
  NodeUsage usage;
  std::ifstream load("/proc/loadavg");
  double one_minute = 0;
  if (load >> one_minute) usage.set_cpu_load(one_minute);
  usage.set_memory_used_bytes(MeminfoBytes("MemTotal") - MeminfoBytes("MemAvailable"));
  return usage;
}

}  // namespace clusterd
