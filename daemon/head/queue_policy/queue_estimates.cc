#include "daemon/head/queue_policy/queue_estimates.h"

#include <algorithm>
#include <unordered_map>

#include "common/resources.h"

namespace clusterd {

QueueEstimates::QueueEstimates(const std::vector<NodeCapacity>& available_now, const std::vector<RunningHold>& holds,
                               Micros now)
    : available_(available_now), now_(now) {
  // By amount alone: a device map that holds only the devices running
  // jobs give back would hide the amounts the planned jobs take.
  for (NodeCapacity& node : available_) node.gpu_free.clear();
  for (const RunningHold& hold : holds) {
    std::vector<RankSlot> slots;
    for (const RankSlot& slot : *hold.slots) {
      if (slot.allocated) slots.push_back({slot.node_id, 0, {}, true});
    }
    holds_.push_back(Hold(hold.ends_at, *hold.per_worker, std::move(slots)));
  }
}

RunningHold QueueEstimates::Hold(Micros ends_at, const ResourceSet& per_worker, std::vector<RankSlot> slots) {
  RunningHold hold;
  hold.ends_at = ends_at;
  hold.per_worker = &per_worker_.emplace_back(per_worker);
  hold.slots = &slots_.emplace_back(std::move(slots));
  return hold;
}

std::optional<Micros> QueueEstimates::Next(const GangRequest& gang, double timeout_s) {
  const Reservation reservation = Reserve(gang, available_, holds_);
  if (!reservation.known || reservation.starts_at == kForever) return std::nullopt;
  const Micros starts_at = std::max(now_, reservation.starts_at);
  // Its room, taken from the nodes as they are now and given back when
  // its time limit ends it.
  std::unordered_map<std::string, NodeCapacity*> node_of;
  for (NodeCapacity& node : available_) node_of[node.node_id] = &node;
  std::vector<RankSlot> slots;
  for (const PlacementPlan::Slot& planned : reservation.plan.slots) {
    auto node = node_of.find(planned.node_id);
    if (node == node_of.end()) continue;
    for (const auto& [name, amount] : gang.per_worker.amounts()) {
      node->second->resources[name] -= amount * planned.count;
    }
    for (int i = 0; i < planned.count; ++i) slots.push_back({planned.node_id, 0, {}, true});
  }
  holds_.push_back(Hold(EndsBy(starts_at, timeout_s), gang.per_worker, std::move(slots)));
  return starts_at;
}

}  // namespace clusterd
