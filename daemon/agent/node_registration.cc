#include "daemon/agent/node_registration.h"

#include <unistd.h>

#include <vector>

#include <fmt/format.h>

#include "common/resources.h"
#include "common/session.h"

namespace clusterd {

std::string HostName() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "node";
  return name;
}

RegisterNode DescribeNode(const NodeAgentOptions& options, const ProbedResources& probed) {
  RegisterNode r;
  r.set_name(options.node_name.empty() ? HostName() : options.node_name);
  r.set_name_given(!options.node_name.empty());
  r.set_address(options.node_ip);
  r.set_is_head(options.is_head);
  r.set_instance_id(fmt::format("{}-{}-{}", HostName(), getpid(), NewToken().substr(0, 8)));
  auto& total = *r.mutable_total()->mutable_amounts();
  total = options.custom.amounts();
  total[kCpu] = options.num_cpus >= 0 ? options.num_cpus : probed.cpus;
  total[kMemory] = options.memory_bytes >= 0 ? options.memory_bytes : probed.memory_bytes;
  // --num-gpus N names devices 0..N-1 (also how tests fake GPUs); else what nvidia-smi lists.
  std::vector<int> gpus = probed.gpu_indexes;
  if (options.num_gpus >= 0) {
    gpus.clear();
    for (int i = 0; i < static_cast<int>(options.num_gpus); ++i) gpus.push_back(i);
  }
  if (!gpus.empty()) total[kGpu] = static_cast<double>(gpus.size());
  for (int gpu : gpus) r.add_gpu_indexes(gpu);
  return r;
}

}  // namespace clusterd
