#include "daemon/head/preemption/victim_choice.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string_view>
#include <unordered_map>

#include "common/resources.h"
#include "daemon/head/gpu_slots.h"

namespace clusterd {

namespace {

// The nodes as they are now, looked at once per choice: where each is,
// which can hold a worker of the blocked job already, and how many
// workers all of them could hold. On a full cluster of thousands of nodes
// few have room, and a Room is planned over those and the ones it freed.
class NodesNow {
 public:
  NodesNow(const std::vector<NodeCapacity>& nodes, const GangRequest& request) : nodes_(nodes), request_(request) {
    index_.reserve(nodes.size());
    for (size_t i = 0; i < nodes.size(); ++i) {
      index_.emplace(nodes[i].node_id, i);
      const int fit = WorkersOn(nodes[i]);
      workers_ += fit;
      if (fit > 0) roomy_.push_back(i);
    }
  }
  // Workers of the request one node could hold (STRICT_SPREAD: one at most).
  int WorkersOn(const NodeCapacity& node) const {
    return WorkersThatFit(node, request_.per_worker,
                          request_.placement == STRICT_SPREAD ? 1 : request_.num_workers);
  }
  std::optional<size_t> Find(const std::string& node_id) const {
    auto found = index_.find(node_id);
    if (found == index_.end()) return std::nullopt;
    return found->second;
  }
  const NodeCapacity& at(size_t i) const { return nodes_[i]; }
  const std::vector<size_t>& roomy() const { return roomy_; }
  int workers() const { return workers_; }
  const GangRequest& request() const { return request_; }

 private:
  const std::vector<NodeCapacity>& nodes_;
  const GangRequest& request_;
  std::unordered_map<std::string_view, size_t> index_;
  std::vector<size_t> roomy_;
  int workers_ = 0;
};

// The nodes as if some gangs were gone: copies of only the nodes those
// gangs give their share back to, over NodesNow.
class Room {
 public:
  explicit Room(const NodesNow& now) : now_(&now) {}

  void Free(const RunningGang& gang) {
    for (const RunningGang::Rank& rank : gang.ranks) {
      std::optional<size_t> at = now_->Find(*rank.node_id);
      if (!at) continue;  // not schedulable: its room helps nobody
      GiveBack(gang, rank, &Changed(*at));
    }
  }

  bool Fits() const {
    // Nodes with no room for a worker change nothing of whether it fits.
    std::vector<NodeCapacity> candidates;
    for (size_t i : now_->roomy()) {
      if (!changed_.count(i)) candidates.push_back(now_->at(i));
    }
    for (const auto& [_, node] : changed_) {
      if (now_->WorkersOn(node) > 0) candidates.push_back(node);
    }
    return !candidates.empty() && !PlanGang(now_->request(), candidates).slots.empty();
  }

  // Whether freeing `gang` could make the request fit, by counting the
  // workers the nodes would hold (the gang's nodes with its share back,
  // the others as they are): a necessary condition, worked out on copies
  // of the gang's own nodes. With thousands of running gangs, most of
  // which free too little alone, it keeps a decision from planning once
  // per gang.
  bool CouldFitFreeing(const RunningGang& gang) const {
    int workers = now_->workers();
    for (const auto& [at, node] : changed_) workers += now_->WorkersOn(node) - now_->WorkersOn(now_->at(at));
    std::map<size_t, NodeCapacity> freed;
    for (const RunningGang::Rank& rank : gang.ranks) {
      std::optional<size_t> at = now_->Find(*rank.node_id);
      if (!at) continue;
      auto emplaced = freed.try_emplace(*at, NodeOf(*at));
      GiveBack(gang, rank, &emplaced.first->second);
    }
    for (const auto& [at, node] : freed) workers += now_->WorkersOn(node) - now_->WorkersOn(NodeOf(at));
    return workers >= now_->request().num_workers;
  }

 private:
  const NodeCapacity& NodeOf(size_t at) const {
    auto found = changed_.find(at);
    return found == changed_.end() ? now_->at(at) : found->second;
  }
  NodeCapacity& Changed(size_t at) {
    auto found = changed_.find(at);
    if (found == changed_.end()) found = changed_.emplace(at, now_->at(at)).first;
    return found->second;
  }
  static void GiveBack(const RunningGang& gang, const RunningGang::Rank& rank, NodeCapacity* node) {
    for (const auto& [name, amount] : gang.per_worker->amounts()) node->resources[name] += amount;
    // The node's devices, as the node table will give them back.
    const double gpus = Amount(*gang.per_worker, kGpu);
    if (gpus > 0 && !node->gpu_free.empty() && rank.gpus && !rank.gpus->empty()) {
      GpuSlots slots = GpuSlots::FromFree(node->gpu_free);
      slots.Give(gpus, *rank.gpus);
      node->gpu_free = slots.free();
    }
  }

  const NodesNow* now_;
  std::map<size_t, NodeCapacity> changed_;  // by index in NodesNow
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
  const NodesNow now(available, blocked);
  Room base(now);
  for (const RunningGang& gang : running) {
    if (!gang.being_preempted) continue;
    base.Free(gang);
    choice.under_way.push_back(gang.job_id);
  }
  if (base.Fits()) {
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
    if (!base.CouldFitFreeing(*gang)) continue;
    Room room = base;
    room.Free(*gang);
    if (room.Fits()) {
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
    if (room.Fits()) {
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
    if (without.Fits()) taken.erase(taken.begin() + static_cast<std::ptrdiff_t>(i));
  }
  for (const RunningGang* gang : taken) choice.chosen.push_back(gang->job_id);
  return choice;
}

}  // namespace clusterd
