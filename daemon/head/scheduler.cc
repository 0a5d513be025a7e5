#include "daemon/head/scheduler.h"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "common/net/net_address.h"
#include "common/resources.h"
#include "daemon/head/gpu_slots.h"

namespace clusterd {

NodeCapacity IdleCapacity(const NodeInfo& node, const std::string& machine) {
  NodeCapacity capacity{node.node_id(), node.name(), ToAmounts(node.total()), node.address(), machine, {}};
  for (int gpu : node.gpu_indexes()) capacity.gpu_free[gpu] = 1.0;
  return capacity;
}

int WorkersThatFit(const NodeCapacity& node, const ResourceSet& per_worker, int at_most) {
  int fit = at_most;
  for (const auto& [name, want] : per_worker.amounts()) {
    if (want <= 0) continue;
    if (name == kGpu) {
      // Per device, as the node table will allocate them.
      GpuSlots gpus = GpuSlots::FromFree(node.gpu_free);
      if (node.gpu_free.empty()) {
        std::map<int, double> whole;
        for (int i = 0; i < static_cast<int>(std::floor(Amount(node.resources, kGpu) + 1e-9)); ++i) whole[i] = 1.0;
        gpus = GpuSlots::FromFree(whole);
      }
      fit = std::min(fit, gpus.Fit(want, at_most));
      continue;
    }
    // Compared as doubles: a tiny request (memory: 16 bytes) gives a count
    // far beyond int, which a cast would turn into INT_MIN ("infeasible").
    double n = std::floor(Amount(node.resources, name) / want + 1e-9);
    if (n < fit) fit = n <= 0 ? 0 : static_cast<int>(n);
  }
  return fit;
}

namespace {

PlacementPlan PlanOnce(const GangRequest& request, const std::vector<NodeCapacity>& nodes) {
  const int want = request.num_workers;
  std::vector<int> capacity;
  capacity.reserve(nodes.size());
  for (const auto& node : nodes) {
    capacity.push_back(WorkersThatFit(node, request.per_worker, want));
    // PACK: the first node that holds the whole gang is where the full
    // ordering below would put it, so a large cluster is not walked to its
    // end for every job that fits on one node.
    if (request.placement == PACK && want > 0 && capacity.back() == want) {
      PlacementPlan plan;
      plan.slots.push_back({node.node_id, want});
      return plan;
    }
  }
  std::vector<int> counts(nodes.size(), 0);
  int placed = 0;

  switch (request.placement) {
    case PACK: {
      // Fewest nodes: fill the roomiest nodes first, ties in node order. At
      // most `want` nodes take part (each that does holds one or more), so
      // only those are sorted out of a large cluster's.
      std::vector<size_t> order(nodes.size());
      for (size_t i = 0; i < order.size(); ++i) order[i] = i;
      const size_t part = std::min(order.size(), static_cast<size_t>(std::max(want, 0)));
      std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(part), order.end(),
                        [&](size_t a, size_t b) { return capacity[a] != capacity[b] ? capacity[a] > capacity[b] : a < b; });
      order.resize(part);
      for (size_t i : order) {
        int take = std::min(capacity[i], want - placed);
        counts[i] = take;
        placed += take;
        if (placed == want) break;
      }
      break;
    }
    case SPREAD: {
      // One rank per node per round, so the gang is spread as evenly as fits.
      bool progress = true;
      while (placed < want && progress) {
        progress = false;
        for (size_t i = 0; i < nodes.size() && placed < want; ++i) {
          if (counts[i] < capacity[i]) {
            ++counts[i];
            ++placed;
            progress = true;
          }
        }
      }
      break;
    }
    case STRICT_SPREAD:
    default: {
      for (size_t i = 0; i < nodes.size() && placed < want; ++i) {
        if (capacity[i] >= 1) {
          counts[i] = 1;
          ++placed;
        }
      }
      break;
    }
  }
  PlacementPlan plan;
  if (placed < want) return plan;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (counts[i] > 0) plan.slots.push_back({nodes[i].node_id, counts[i]});
  }
  return plan;
}

// The plan's nodes with a loopback address, when the plan spans machines.
std::vector<const NodeCapacity*> LoopbackAcrossMachines(const PlacementPlan& plan,
                                                        const std::vector<NodeCapacity>& nodes) {
  if (plan.slots.size() <= 1) return {};  // one node is one machine
  std::vector<const NodeCapacity*> loopback;
  std::set<std::string> machines;
  for (const auto& slot : plan.slots) {
    for (const auto& node : nodes) {
      if (node.node_id != slot.node_id) continue;
      machines.insert(node.machine);
      if (IsLoopbackAddress(node.address)) loopback.push_back(&node);
    }
  }
  if (machines.size() <= 1) return {};
  return loopback;
}

}  // namespace

PlacementPlan PlanGang(const GangRequest& request, const std::vector<NodeCapacity>& nodes) {
  PlacementPlan plan = PlanOnce(request, nodes);
  std::vector<const NodeCapacity*> bad = LoopbackAcrossMachines(plan, nodes);
  if (bad.empty()) return plan;
  std::vector<NodeCapacity> reachable;
  std::vector<std::string> names;
  for (const auto& node : nodes) {
    if (!IsLoopbackAddress(node.address)) reachable.push_back(node);
  }
  for (const NodeCapacity* node : bad) names.push_back(fmt::format("{} ({})", node->name, node->address));
  PlacementPlan without = PlanOnce(request, reachable);
  if (!without.slots.empty()) return without;
  without.unreachable = fmt::format(
      "the gang would span machines, but node{} {} ha{} a loopback address that ranks on other machines cannot "
      "reach; restart {} agent without --node-ip-address (or with an address the other nodes reach)",
      names.size() == 1 ? "" : "s", fmt::join(names, ", "), names.size() == 1 ? "s" : "ve",
      names.size() == 1 ? "its" : "their");
  return without;
}

namespace {

const char* PlacementName(Placement p) {
  return p == PACK ? "PACK" : p == SPREAD ? "SPREAD" : "STRICT_SPREAD";
}

std::string Describe(const GangRequest& request, const std::vector<NodeCapacity>& nodes, const char* what) {
  int total_fit = 0;
  for (const auto& node : nodes) total_fit += WorkersThatFit(node, request.per_worker, request.num_workers);
  std::string need = fmt::format("{} x {{{}}} ({})", request.num_workers, FormatResources(request.per_worker),
                                 PlacementName(request.placement));
  if (nodes.empty()) return fmt::format("needs {}; there are no {} nodes", need, what);
  if (request.placement == STRICT_SPREAD && static_cast<int>(nodes.size()) < request.num_workers) {
    return fmt::format("needs {}: one rank per node, but there {} {} {} node{}", need, nodes.size() == 1 ? "is" : "are",
                       nodes.size(), what, nodes.size() == 1 ? "" : "s");
  }
  // Name the resource that runs out on the roomiest node, the most useful hint.
  std::string shortfall;
  for (const auto& node : nodes) {
    std::string s = Shortfall(node.resources, request.per_worker);
    if (!s.empty()) {
      shortfall = fmt::format("; e.g. on {}: {}", node.name, s);
      break;
    }
  }
  return fmt::format("needs {}; {} {} node{} {} {} such worker{}{}", need, nodes.size(), what,
                     nodes.size() == 1 ? "" : "s", nodes.size() == 1 ? "holds" : "hold", total_fit,
                     total_fit == 1 ? "" : "s", shortfall);
}

}  // namespace

PlaceResult PlaceGang(const GangRequest& request, const std::vector<NodeCapacity>& available_now,
                      const NodeRowsFn& live_totals_fn) {
  PlaceResult result;
  result.plan = PlanGang(request, available_now);
  if (!result.plan.slots.empty()) {
    result.outcome = PlaceOutcome::kPlaced;
    return result;
  }
  if (!result.plan.unreachable.empty()) {
    result.outcome = PlaceOutcome::kWait;
    result.reason = "waiting: " + result.plan.unreachable;
    return result;
  }
  const std::vector<NodeCapacity>& live_totals = live_totals_fn();
  if (PlanGang(request, live_totals).slots.empty()) {
    result.outcome = PlaceOutcome::kInfeasible;
    result.reason = "cannot fit even on an idle cluster: " + Describe(request, live_totals, "schedulable");
    return result;
  }
  result.outcome = PlaceOutcome::kWait;
  result.reason = "waiting for resources: " + Describe(request, available_now, "schedulable");
  return result;
}

}  // namespace clusterd
