#include "cli/node_printer.h"

#include <map>

#include <fmt/format.h>

#include "common/resources.h"
#include "common/text.h"

namespace clusterd::cli {

namespace {
const char* StateWord(NodeState state) {
  return state == ALIVE ? "ALIVE" : state == DRAINING ? "DRAINING" : state == DEAD ? "DEAD" : "NEW";
}

std::string Ago(int64_t now_ms, int64_t then_ms) {
  return then_ms > 0 ? fmt::format("{:.0f}s ago", (now_ms - then_ms) / 1000.0) : "never";
}
}  // namespace

std::string FormatBadGpus(const NodeInfo& node) {
  std::string out;
  for (const GpuStatus& bad : node.bad_gpus()) {
    out += fmt::format("{}GPU {} out: {}", out.empty() ? "" : "; ", bad.index(), bad.fault());
  }
  return out;
}

std::string FormatNodeDetail(const NodeInfo& node, int64_t now_unix_ms) {
  std::string out = fmt::format("Node {}{} ({})\n", node.name(), node.is_head() ? " [head]" : "", node.node_id());
  out += fmt::format("  State:     {}{}\n", StateWord(node.state()),
                     node.state_reason().empty() ? "" : ": " + node.state_reason());
  out += fmt::format("  Address:   {}\n", node.address());
  out += fmt::format("  Resources: {} available of {}\n", FormatResources(node.available()),
                     FormatResources(node.total()));
  out += fmt::format("  Heard:     {}\n", Ago(now_unix_ms, node.last_heartbeat_unix_ms()));
  if (node.gpu_indexes_size() == 0 && node.bad_gpus_size() == 0) return out;
  std::map<int, const GpuStatus*> read, bad;
  for (const GpuStatus& gpu : node.usage().gpus()) read[gpu.index()] = &gpu;
  for (const GpuStatus& gpu : node.bad_gpus()) bad[gpu.index()] = &gpu;
  std::map<int, bool> indexes;
  for (int index : node.gpu_indexes()) indexes[index] = true;
  for (const auto& [index, gpu] : bad) indexes.emplace(index, false);  // out, and no longer listed by the node
  out += "  GPUs:\n";
  for (const auto& [index, listed] : indexes) {
    std::string use = "use not read";
    if (auto it = read.find(index); it != read.end() && it->second->usage_known()) {
      use = fmt::format("{:.0f}% busy, {} of {} memory", it->second->utilization() * 100,
                        HumanBytes(static_cast<uint64_t>(it->second->memory_used_bytes())),
                        HumanBytes(static_cast<uint64_t>(it->second->memory_total_bytes())));
    }
    if (auto it = bad.find(index); it != bad.end()) {
      out += fmt::format("    {}: OUT since {}: {} (back with `clusterctl node {} --reset-gpu {}`){}\n", index,
                         Ago(now_unix_ms, it->second->fault_since_unix_ms()), it->second->fault(), node.name(),
                         index, listed ? "" : "; the node lists it no more");
    } else {
      out += fmt::format("    {}: ok, {}\n", index, use);
    }
  }
  return out;
}

}  // namespace clusterd::cli
