#include "cli/status_printer.h"

#include <google/protobuf/util/json_util.h>

#include <ctime>
#include <map>
#include <set>

#include <fmt/format.h>

#include "cli/job_printer.h"
#include "common/resources.h"
#include "common/text.h"

namespace clusterd::cli {

namespace {

const char* StateName(NodeState state) {
  switch (state) {
    case ALIVE: return "ALIVE";
    case DRAINING: return "DRAINING";
    case DEAD: return "DEAD";
    default: return "UNKNOWN";
  }
}

std::string Rule() { return std::string(64, '-') + "\n"; }

std::string NodeLine(const NodeInfo& node, int64_t now_ms) {
  std::string seen = node.last_heartbeat_unix_ms() > 0
                         ? fmt::format("{:.1f}s ago", (now_ms - node.last_heartbeat_unix_ms()) / 1000.0)
                         : "never";
  std::string line = fmt::format(" {}{} ({}, {}), {}; last heard {}", node.name(), node.is_head() ? " [head]" : "",
                                 node.node_id(), node.address(), FormatResources(node.total()), seen);
  if (node.state() != ALIVE) line += fmt::format("; {}", node.state_reason());
  return line + "\n";
}

}  // namespace

std::string FormatJournalLine(const JournalStatus& journal) {
  if (!journal.ok()) {
    return fmt::format("Journal: FAILING since {}: {} (submit, stop and delete are refused until it can be written "
                       "again; the head retries)", FormatLocalTime(journal.failing_since_unix_ms()), journal.reason());
  }
  std::string line = fmt::format("Journal: ok, {}", HumanBytes(static_cast<uint64_t>(journal.bytes())));
  if (journal.snapshots() > 0) {
    line += fmt::format(" (compacted to {} at {})", HumanBytes(static_cast<uint64_t>(journal.snapshot_bytes())),
                        FormatLocalTime(journal.last_snapshot_unix_ms()));
  }
  return line;
}

std::string FormatClusterStatus(const ClusterStatus& status, int64_t now_unix_ms, bool all_nodes) {
  std::time_t secs = static_cast<std::time_t>(now_unix_ms / 1000);
  std::tm tm{};
  localtime_r(&secs, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S", &tm);
  std::string out = fmt::format("======== Cluster status: {} ========\n", stamp);
  out += fmt::format("Head: {}\n", status.head_address());
  if (status.has_journal()) out += FormatJournalLine(status.journal()) + "\n";
  out += "Node status\n" + Rule();
  for (NodeState state : {ALIVE, DRAINING, DEAD}) {
    std::string title = state == ALIVE ? "Alive" : state == DRAINING ? "Draining" : "Dead";
    std::string lines;
    int listed = 0;
    for (const auto& node : status.nodes()) {
      if (node.state() != state) continue;
      lines += NodeLine(node, now_unix_ms);
      ++listed;
    }
    // The head counts every node; it lists only a few of each state when
    // asked for a summary.
    const NodeCounts& counts = status.node_counts();
    int count = !status.has_node_counts() ? listed
                : state == ALIVE          ? counts.alive()
                : state == DRAINING       ? counts.draining()
                                          : counts.dead();
    out += fmt::format("{} ({}):\n", title, count);
    const char* lower = state == ALIVE ? "alive" : state == DRAINING ? "draining" : "dead";
    if (count == 0) {
      out += fmt::format(" (no {} nodes)\n", lower);
    } else if (listed < count || (count > kNodesListed && !all_nodes)) {
      out += fmt::format(" ({} {} nodes: `clusterctl status --all` or `clusterctl nodes` lists them)\n", count, lower);
    } else {
      out += lines;
    }
  }
  out += "\nResources\n" + Rule() + "Usage:\n";
  std::set<std::string> names;
  for (const auto& [name, value] : status.total().amounts()) names.insert(name);
  if (names.empty()) out += " (no resources)\n";
  // CPU, GPU, memory first, as ray status does; custom names after.
  std::vector<std::string> order;
  for (const char* known : {kCpu, kGpu, kMemory}) {
    if (names.erase(known)) order.push_back(known);
  }
  order.insert(order.end(), names.begin(), names.end());
  for (const auto& name : order) {
    out += fmt::format(" {}/{} {}\n", FormatAmount(name, Amount(status.used(), name)),
                       FormatAmount(name, Amount(status.total(), name)), name);
  }
  out += "\nDemands:\n";
  if (status.pending().empty()) out += " (no resource demands)\n";
  // Alike demands in a row (an array's waiting jobs) are one line.
  auto what = [](const PendingDemand& d) {
    return fmt::format("{} x {{{}}}: {}{}", d.num_workers(), FormatResources(d.per_worker()),
                       d.infeasible() ? "INFEASIBLE: " : "", d.reason());
  };
  // The head counts alike jobs in a row (more_like_it); an older head
  // listed each, and those are counted here.
  for (int i = 0; i < status.pending_size();) {
    const PendingDemand& demand = status.pending(i);
    const std::string line = what(demand);
    int listed = 1;
    int64_t jobs = 1 + demand.more_like_it();
    while (i + listed < status.pending_size() && status.pending(i + listed).job_name() == demand.job_name() &&
           what(status.pending(i + listed)) == line) {
      jobs += 1 + status.pending(i + listed).more_like_it();
      ++listed;
    }
    std::string ids = jobs == 1 ? demand.job_id() : fmt::format("{} and {} more like it", demand.job_id(), jobs - 1);
    out += fmt::format(" {} ({}): {}\n", demand.job_name(), ids, line);
    i += listed;
  }
  return out;
}

std::string FormatNodeTable(const google::protobuf::RepeatedPtrField<NodeInfo>& nodes, int64_t now_unix_ms) {
  std::string out = fmt::format("{:<16} {:<10} {:<9} {:<16} {:>4} {:<10} {}\n", "NAME", "ID", "STATE", "ADDRESS",
                                "INC", "HEARD", "RESOURCES (available / total)");
  for (const auto& node : nodes) {
    std::string heard = fmt::format("{:.1f}s", (now_unix_ms - node.last_heartbeat_unix_ms()) / 1000.0);
    out += fmt::format("{:<16} {:<10} {:<9} {:<16} {:>4} {:<10} {} / {}\n",
                       node.name() + (node.is_head() ? "*" : ""), node.node_id(), StateName(node.state()),
                       node.address(), node.incarnation(), heard, FormatResources(node.available()),
                       FormatResources(node.total()));
  }
  return out;
}

}  // namespace clusterd::cli
