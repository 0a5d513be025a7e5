#include "daemon/head/queue_policy/reservation.h"

#include <algorithm>
#include <map>

#include "common/resources.h"

namespace clusterd {

namespace {

// Gives back (sign 1) or takes again (sign -1) what `hold` has on the rows.
void Apply(const RunningHold& hold, int sign, const std::map<std::string, size_t>& row_of,
           std::vector<NodeCapacity>* rows) {
  const double gpus = Amount(hold.per_worker, kGpu);
  const double per_device = gpus >= 1 ? 1.0 : gpus;
  for (const HeldSlot& slot : hold.slots) {
    auto row = row_of.find(slot.node_id);
    if (row == row_of.end()) continue;  // a node that takes no work now
    NodeCapacity& node = (*rows)[row->second];
    for (const auto& [name, amount] : hold.per_worker.amounts()) {
      (*node.resources.mutable_amounts())[name] += sign * amount;
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
  std::vector<NodeCapacity> rows = available_now;
  std::map<std::string, size_t> row_of;
  for (size_t i = 0; i < rows.size(); ++i) row_of[rows[i].node_id] = i;

  size_t applied = 0;  // holds[0, applied) are given back in `rows`
  auto plan_after = [&](size_t ends) {
    for (; applied < ends; ++applied) Apply(holds[applied], 1, row_of, &rows);
    for (; applied > ends; --applied) Apply(holds[applied - 1], -1, row_of, &rows);
    return PlanGang(gang, rows);
  };

  Reservation reservation;
  if (plan_after(holds.size()).slots.empty()) return reservation;  // not even once every running job ends
  // The fewest ends after which it fits, in [low, high]: it fits after high.
  size_t low = 0, high = holds.size();
  while (low < high) {
    const size_t mid = low + (high - low) / 2;
    if (plan_after(mid).slots.empty()) {
      low = mid + 1;
    } else {
      high = mid;
    }
  }
  const PlacementPlan plan = plan_after(high);
  reservation.known = true;
  reservation.starts_at = high == 0 ? 0 : holds[high - 1].ends_at;
  for (const auto& slot : plan.slots) reservation.nodes.insert(slot.node_id);
  return reservation;
}

}  // namespace clusterd
