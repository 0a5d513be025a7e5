#include "daemon/agent/resource_probe.h"

#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

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

std::string FindNvidiaSmi() {
  // PATH first, then where the driver and NVIDIA's container toolkit put
  // it when a service manager's PATH does not name it (systemd units run
  // with a short PATH; GPU containers mount it under /usr/local/nvidia).
  std::vector<std::string> dirs;
  if (const char* path = std::getenv("PATH")) {
    std::istringstream entries(path);
    for (std::string dir; std::getline(entries, dir, ':');) {
      if (!dir.empty() && dir[0] == '/') dirs.push_back(dir);
    }
  }
  for (const char* dir : {"/usr/bin", "/usr/local/bin", "/usr/local/nvidia/bin"}) dirs.push_back(dir);
  for (const std::string& dir : dirs) {
    std::string candidate = dir + "/nvidia-smi";
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

std::vector<int> NvidiaGpuIndexes() {
  std::vector<int> out;
  std::string nvidia_smi = FindNvidiaSmi();
  // It goes through the shell in single quotes: a path holding one is not run.
  if (nvidia_smi.empty() || nvidia_smi.find('\'') != std::string::npos) return out;
  std::string command = "'" + nvidia_smi + "' --query-gpu=index --format=csv,noheader 2>/dev/null";
  FILE* pipe = popen(command.c_str(), "r");
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
