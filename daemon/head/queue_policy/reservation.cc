#include "daemon/head/queue_policy/reservation.h"

#include <algorithm>
#include <string_view>
#include <unordered_map>

#include "common/resources.h"

namespace clusterd {

namespace {

// Gives back (sign 1) or takes again (sign -1) what `hold` has on the rows.
void Apply(const RunningHold& hold, int sign, const std::unordered_map<std::string_view, size_t>& row_of,
           std::vector<NodeCapacity>* rows) {
  const ResourceSet& per_worker = *hold.per_worker;
  const double gpus = Amount(per_worker, kGpu);
  const double per_device = gpus >= 1 ? 1.0 : gpus;
  for (const RankSlot& slot : *hold.slots) {
    if (!slot.allocated) continue;
    auto row = row_of.find(slot.node_id);
    if (row == row_of.end()) continue;  // a node that takes no work now
    NodeCapacity& node = (*rows)[row->second];
    for (const auto& [name, amount] : per_worker.amounts()) {
      node.resources[name] += sign * amount;
    }
    for (int gpu : slot.gpus) node.gpu_free[gpu] += sign * per_device;
  }
}

}  // namespace

Micros EndsBy(Micros started_at, double timeout_s) {
  // Past a century a time limit is no limit (and would overflow).
  constexpr double kMaxSeconds = 100.0 * 365 * 86400;
  if (timeout_s <= 0 || timeout_s > kMaxSeconds) return kForever;
  return started_at + static_cast<Micros>(timeout_s * 1e6);
}

Reservation Reserve(const GangRequest& gang, const std::vector<NodeCapacity>& available_now,
                    std::vector<RunningHold> holds) {
  std::stable_sort(holds.begin(), holds.end(),
                   [](const RunningHold& a, const RunningHold& b) { return a.ends_at < b.ends_at; });
  // Planned on only the nodes that could take a worker: those with room
  // now, and those a running job gives back as it ends (added as met). On
  // a full cluster of 1,000 nodes that is a few rows, not a copy of all.
  // Keyed by views of available_now's ids, which outlive them: no copy of
  // a thousand ids per reservation.
  std::vector<NodeCapacity> rows;
  std::unordered_map<std::string_view, size_t> row_of;
  std::unordered_map<std::string_view, size_t> now_of;  // node id -> its row in available_now
  now_of.reserve(available_now.size());
  for (size_t i = 0; i < available_now.size(); ++i) {
    now_of.emplace(available_now[i].node_id, i);
    if (WorkersThatFit(available_now[i], gang.per_worker, 1) > 0) {
      row_of.emplace(available_now[i].node_id, rows.size());
      rows.push_back(available_now[i]);
    }
  }
  auto add_rows_of = [&](const RunningHold& hold) {
    for (const RankSlot& slot : *hold.slots) {
      auto now = now_of.find(slot.node_id);
      if (!slot.allocated || now == now_of.end() || row_of.count(slot.node_id)) continue;
      row_of.emplace(slot.node_id, rows.size());
      rows.push_back(available_now[now->second]);
    }
  };

  size_t applied = 0;  // holds[0, applied) are given back in `rows`
  auto plan_after = [&](size_t ends) {
    for (; applied < ends; ++applied) {
      add_rows_of(holds[applied]);
      Apply(holds[applied], 1, row_of, &rows);
    }
    for (; applied > ends; --applied) Apply(holds[applied - 1], -1, row_of, &rows);
    return PlanGang(gang, rows);
  };

  Reservation reservation;
  // Doubling: the fewest ends after which it fits lie in (low, high].
  const size_t n = holds.size();
  size_t low = 0, high = 0;
  if (!plan_after(0).slots.empty()) {
    high = 0;  // room was made otherwise (a preempted job's, given back already)
  } else {
    high = 1;
    while (high < n && plan_after(high).slots.empty()) {
      low = high;
      high = std::min(n, high * 2);
    }
    if (high > n || plan_after(high).slots.empty()) return reservation;  // not even once every running job ends
    // Halving within (low, high].
    while (high - low > 1) {
      const size_t mid = low + (high - low) / 2;
      if (plan_after(mid).slots.empty()) {
        low = mid;
      } else {
        high = mid;
      }
    }
  }
  const PlacementPlan plan = plan_after(high);
  reservation.known = true;
  reservation.starts_at = high == 0 ? 0 : holds[high - 1].ends_at;
  for (const auto& slot : plan.slots) reservation.nodes.insert(slot.node_id);
  reservation.plan = plan;
  return reservation;
}

}  // namespace clusterd
