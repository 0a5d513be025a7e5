#include "cli/status_printer.h"

#include <google/protobuf/util/json_util.h>

#include <ctime>
#include <map>
#include <set>

#include <fmt/format.h>

#include "cli/job_printer.h"
#include "cli/node_printer.h"
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
  // A node drained for its GPUs says so in its reason already.
  if (node.bad_gpus_size() > 0 && node.state() == ALIVE) line += "; " + FormatBadGpus(node);
  return line + "\n";
}

// 12345 -> "12,345": counts of jobs are read at a glance.
std::string Counted(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

}  // namespace

std::string FormatDemands(const google::protobuf::RepeatedPtrField<PendingDemand>& pending) {
  if (pending.empty()) return " (no resource demands)\n";
  // One line per shape (workers, resources each, INFEASIBLE or not), in
  // the order the head sent them. A head sums up its queue by shape; an
  // older one sent alike jobs in a row, or each: added up here too, so the
  // output is as long as the shapes are many, never as the jobs.
  struct Line {
    const PendingDemand* first;
    int64_t jobs = 0;
  };
  std::vector<Line> lines;
  std::map<std::string, size_t> line_of;
  const PendingDemand* rest = nullptr;  // the head's sum of shapes it did not list
  for (const PendingDemand& demand : pending) {
    if (demand.num_workers() == 0) {
      rest = &demand;
      continue;
    }
    const std::string shape = fmt::format("{} x {{{}}}{}", demand.num_workers(), FormatResources(demand.per_worker()),
                                          demand.infeasible() ? " INFEASIBLE" : "");
    auto [it, added] = line_of.emplace(shape, lines.size());
    if (added) lines.push_back({&demand, 0});
    lines[it->second].jobs += 1 + demand.more_like_it();
  }
  std::string out;
  for (const Line& line : lines) {
    const PendingDemand& d = *line.first;
    out += fmt::format(" {} job{} of {} x {{{}}}: {}{} (first: {}{})\n", Counted(line.jobs), line.jobs == 1 ? "" : "s",
                       d.num_workers(), FormatResources(d.per_worker()), d.infeasible() ? "INFEASIBLE: " : "",
                       d.reason(), d.job_id(), d.job_name().empty() ? "" : ", " + d.job_name());
  }
  if (rest) out += fmt::format(" ... {}\n", rest->reason());
  return out;
}

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
  out += FormatDemands(status.pending());
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
