#include "daemon/head/preemption/victim_choice.h"

#include <algorithm>
#include <map>

#include "common/resources.h"
#include "daemon/head/gpu_slots.h"

namespace clusterd {

namespace {

// Node capacities by id, to which freed gangs give their share back.
class Room {
 public:
  explicit Room(const std::vector<NodeCapacity>& available) : nodes_(available) {
    for (size_t i = 0; i < nodes_.size(); ++i) index_[nodes_[i].node_id] = i;
  }

  void Free(const RunningGang& gang) {
    for (const RunningGang::Rank& rank : gang.ranks) {
      auto found = index_.find(rank.node_id);
      if (found == index_.end()) continue;  // not schedulable: its room helps nobody
      GiveBack(gang, rank, &nodes_[found->second]);
    }
  }

  bool Fits(const GangRequest& request) const { return !PlanGang(request, nodes_).slots.empty(); }

  // Whether freeing `gang` could make `request` fit, by counting the
  // workers the nodes would hold (the gang's nodes with its share back,
  // the others as they are): a necessary condition, worked out on copies
  // of the gang's own nodes, where Fits copies every node and plans. With
  // thousands of running gangs, most of which free too little alone, it
  // keeps a decision from planning once per gang.
  bool CouldFitFreeing(const GangRequest& request, const RunningGang& gang) const {
    int workers = TotalWorkers(request);
    std::map<size_t, NodeCapacity> changed;
    for (const RunningGang::Rank& rank : gang.ranks) {
      auto found = index_.find(rank.node_id);
      if (found == index_.end()) continue;
      auto emplaced = changed.try_emplace(found->second, nodes_[found->second]);
      GiveBack(gang, rank, &emplaced.first->second);
    }
    for (const auto& [at, node] : changed) workers += WorkersOn(request, node) - WorkersOn(request, nodes_[at]);
    return workers >= request.num_workers;
  }

 private:
  static void GiveBack(const RunningGang& gang, const RunningGang::Rank& rank, NodeCapacity* node) {
    auto* amounts = node->resources.mutable_amounts();
    for (const auto& [name, amount] : gang.per_worker.amounts()) (*amounts)[name] += amount;
    // The node's devices, as the node table will give them back.
    const double gpus = Amount(gang.per_worker, kGpu);
    if (gpus > 0 && !node->gpu_free.empty() && !rank.gpus.empty()) {
      GpuSlots slots = GpuSlots::FromFree(node->gpu_free);
      slots.Give(gpus, rank.gpus);
      node->gpu_free = slots.free();
    }
  }
  // Workers of the request one node could hold (STRICT_SPREAD: one at most).
  static int WorkersOn(const GangRequest& request, const NodeCapacity& node) {
    return WorkersThatFit(node, request.per_worker, request.placement == STRICT_SPREAD ? 1 : request.num_workers);
  }
  int TotalWorkers(const GangRequest& request) const {
    if (total_workers_ < 0) {
      total_workers_ = 0;
      for (const NodeCapacity& node : nodes_) total_workers_ += WorkersOn(request, node);
    }
    return total_workers_;
  }

  std::vector<NodeCapacity> nodes_;
  std::map<std::string, size_t> index_;
  mutable int total_workers_ = -1;  // TotalWorkers, once counted: a Room serves one request
};

bool Eligible(const RunningGang& gang, int64_t blocked_priority) {
  return gang.preemptible && !gang.being_preempted && (gang.borrowing || gang.priority < blocked_priority);
}

}  // namespace

bool PreferredVictim(const RunningGang& a, const RunningGang& b) {
  if (a.borrowing != b.borrowing) return a.borrowing;
  if (a.priority != b.priority) return a.priority < b.priority;
  if (a.newest_checkpoint_unix_ms != b.newest_checkpoint_unix_ms) {
    return a.newest_checkpoint_unix_ms > b.newest_checkpoint_unix_ms;
  }
  if (a.started_unix_ms != b.started_unix_ms) return a.started_unix_ms > b.started_unix_ms;
  return a.job_id > b.job_id;  // the later id, the younger job
}

VictimChoice ChooseVictims(const GangRequest& blocked, int64_t blocked_priority,
                           const std::vector<NodeCapacity>& available, const std::vector<RunningGang>& running) {
  VictimChoice choice;
  Room base(available);
  for (const RunningGang& gang : running) {
    if (!gang.being_preempted) continue;
    base.Free(gang);
    choice.under_way.push_back(gang.job_id);
  }
  if (base.Fits(blocked)) {
    choice.enough = true;
    return choice;
  }
  std::vector<const RunningGang*> eligible;
  for (const RunningGang& gang : running) {
    if (Eligible(gang, blocked_priority)) eligible.push_back(&gang);
  }
  std::sort(eligible.begin(), eligible.end(),
            [](const RunningGang* a, const RunningGang* b) { return PreferredVictim(*a, *b); });
  // One gang, when one is enough: the first in order that is.
  for (const RunningGang* gang : eligible) {
    if (!base.CouldFitFreeing(blocked, *gang)) continue;
    Room room = base;
    room.Free(*gang);
    if (room.Fits(blocked)) {
      choice.chosen.push_back(gang->job_id);
      choice.enough = true;
      return choice;
    }
  }
  // Else gangs in order until the job fits, then those it fits without,
  // least preferred first, are given back: a small set, not always the
  // smallest (that is bin packing), in the order's spirit.
  std::vector<const RunningGang*> taken;
  Room room = base;
  for (const RunningGang* gang : eligible) {
    room.Free(*gang);
    taken.push_back(gang);
    if (room.Fits(blocked)) {
      choice.enough = true;
      break;
    }
  }
  if (!choice.enough) return choice;
  for (size_t i = taken.size(); i-- > 0;) {
    Room without = base;
    for (size_t j = 0; j < taken.size(); ++j) {
      if (j != i) without.Free(*taken[j]);
    }
    if (without.Fits(blocked)) taken.erase(taken.begin() + static_cast<std::ptrdiff_t>(i));
  }
  for (const RunningGang* gang : taken) choice.chosen.push_back(gang->job_id);
  return choice;
}

}  // namespace clusterd
