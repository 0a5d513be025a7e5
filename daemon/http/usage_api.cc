#include "daemon/http/usage_api.h"

#include <cerrno>
#include <cstdlib>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/resources.h"
#include "daemon/http/http_query.h"
#include "daemon/http/json_reply.h"

namespace clusterd {

namespace {

constexpr char kCluster[] = "/api/usage/cluster";
constexpr char kNodes[] = "/api/usage/nodes";
constexpr char kNodePrefix[] = "/api/usage/nodes/";

// ?since_unix_ms=N: 0 when absent, an error naming it when not a whole number.
Result<int64_t> SinceParam(const std::string& target) {
  auto text = QueryParam(target, "since_unix_ms");
  if (!text) return int64_t{0};
  errno = 0;
  char* end = nullptr;
  long long value = std::strtoll(text->c_str(), &end, 10);
  if (text->empty() || *end != '\0' || errno == ERANGE) {
    return Status::InvalidArgument(
        fmt::format("since_unix_ms={} is not a whole number (milliseconds since 1970, UTC)", *text));
  }
  return static_cast<int64_t>(value);
}

// A path segment's %XX escapes decoded ('+' stays '+', as in any path);
// nullopt for a '%' not followed by two hex digits. A page asks for a node
// by a name that may hold spaces or any character but '/'.
std::optional<std::string> PathSegmentDecoded(const std::string& segment) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  for (size_t i = 0; i < segment.size(); ++i) {
    if (segment[i] != '%') {
      out += segment[i];
      continue;
    }
    if (i + 2 >= segment.size()) return std::nullopt;
    const int high = hex(segment[i + 1]), low = hex(segment[i + 2]);
    if (high < 0 || low < 0) return std::nullopt;
    out += static_cast<char>(high * 16 + low);
    i += 2;
  }
  return out;
}

// null where the value is unknown (not measured at that time).
nlohmann::ordered_json OrNull(const std::optional<double>& value) {
  return value ? nlohmann::ordered_json(*value) : nlohmann::ordered_json();
}

nlohmann::ordered_json GpuJson(const NodeUsageSample::Gpu& gpu) {
  nlohmann::ordered_json shown = {{"index", gpu.index}};
  // null: the node's probe did not read this GPU's use at that time.
  shown["utilization"] = OrNull(gpu.utilization);
  shown["memory_used_bytes"] = gpu.memory_used_bytes;
  shown["memory_total_bytes"] = gpu.memory_total_bytes;
  return shown;
}

}  // namespace

bool UsageApi::IsPath(const std::string& path) {
  return path == kCluster || path == kNodes || path.rfind(kNodePrefix, 0) == 0;
}

HttpReply UsageApi::Answer(const std::string& target) const {
  auto since = SinceParam(target);
  if (!since.ok()) return JsonErrorOf(since.status());
  const std::string path = TargetPath(target);
  if (path == kCluster) return ClusterReply(*since);
  const std::string segment = path.size() > sizeof(kNodePrefix) - 1 ? path.substr(sizeof(kNodePrefix) - 1) : "";
  if (segment.empty()) return JsonError(400, "which node? GET /api/usage/nodes/NODE, NODE its id or name");
  auto node = PathSegmentDecoded(segment);
  if (!node) {
    return JsonError(400, fmt::format("the node's name in {} is badly percent-encoded (a '%' takes two hex digits)",
                                      path));
  }
  return NodeReply(*node, *since);
}

HttpReply UsageApi::NodeReply(const std::string& id_or_name, int64_t since_unix_ms) const {
  const UsageHistory& history = core_->usage_history();
  auto series = history.Node(id_or_name, since_unix_ms);
  if (!series) {
    // A node the head knows that the history holds nothing of (never live
    // since the head started, or gone for longer than the window): no samples.
    const NodeInfo* known = core_->nodes().Find(id_or_name);
    if (!known) {
      return JsonError(404, fmt::format("no node \"{}\": neither a node id nor a node name this head knows",
                                        id_or_name));
    }
    series.emplace();
    series->node_id = known->node_id();
    series->name = known->name();
    const auto& amounts = known->total().amounts();
    auto amount = [&](const char* name) {
      auto it = amounts.find(name);
      return it == amounts.end() ? 0.0 : it->second;
    };
    series->cpus = amount(kCpu);
    series->memory_total_bytes = static_cast<int64_t>(amount(kMemory));
    series->gpus = static_cast<int>(amount(kGpu));
  }
  nlohmann::ordered_json samples = nlohmann::ordered_json::array();
  for (const NodeUsageSample& sample : series->samples) {
    nlohmann::ordered_json gpus = nlohmann::ordered_json::array();
    for (const auto& gpu : sample.gpus) gpus.push_back(GpuJson(gpu));
    samples.push_back({{"t_unix_ms", sample.t_unix_ms},
                       {"cpu_load", sample.cpu_load},
                       {"cpu_utilization", OrNull(sample.cpu_utilization)},
                       {"memory_used_bytes", sample.memory_used_bytes},
                       {"running_ranks", sample.running_ranks},
                       {"gpus", std::move(gpus)}});
  }
  return JsonReply(200, {{"node_id", series->node_id},
                         {"name", series->name},
                         {"interval_ms", history.settings().interval_ms},
                         {"cpus", series->cpus},
                         {"memory_total_bytes", series->memory_total_bytes},
                         {"gpus", series->gpus},
                         {"samples", std::move(samples)}});
}

HttpReply UsageApi::ClusterReply(int64_t since_unix_ms) const {
  const UsageHistory& history = core_->usage_history();
  nlohmann::ordered_json samples = nlohmann::ordered_json::array();
  for (const ClusterUsageSample& sample : history.Cluster(since_unix_ms)) {
    samples.push_back({{"t_unix_ms", sample.t_unix_ms},
                       {"cpu_load", sample.cpu_load},
                       {"cpu_utilization", OrNull(sample.cpu_utilization)},
                       {"cpus", sample.cpus},
                       {"memory_used_bytes", static_cast<int64_t>(sample.memory_used_bytes)},
                       {"memory_total_bytes", static_cast<int64_t>(sample.memory_total_bytes)},
                       {"gpu_utilization_mean", sample.gpu_utilization_mean},
                       {"gpu_memory_used_bytes", static_cast<int64_t>(sample.gpu_memory_used_bytes)},
                       {"gpu_memory_total_bytes", static_cast<int64_t>(sample.gpu_memory_total_bytes)},
                       {"nodes_alive", sample.nodes_alive},
                       {"running_ranks", sample.running_ranks}});
  }
  return JsonReply(200, {{"interval_ms", history.settings().interval_ms}, {"samples", std::move(samples)}});
}

}  // namespace clusterd
