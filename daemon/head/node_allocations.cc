#include "daemon/head/node_allocations.h"

#include <algorithm>

#include "common/resources.h"

namespace clusterd {

namespace {
// What the node offers now: its available set less the free part of the
// GPUs withheld for a fault, so that planning on the set alone (a node
// whose every GPU is withheld) sees none.
// As a scheduler row holds it: read on every allocation, and converted once.
ResourceAmounts Offered(const NodeRoster::Entry& entry) {
  ResourceAmounts offered = ToAmounts(entry.info.available());
  const double withheld = entry.gpus.WithheldFree();
  if (withheld > 0) offered[kGpu] = std::max(0.0, Amount(offered, kGpu) - withheld);
  return offered;
}
}  // namespace

bool NodeAllocations::TryAllocate(const std::string& node_id, const ResourceSet& request, std::vector<int>* gpus) {
  NodeRoster::Entry* entry = roster_->Find(node_id);
  if (!entry || !NodeRoster::TakesWork(*entry)) return false;
  if (!Fits(entry->info.available(), request)) return false;
  auto taken = entry->gpus.Take(Amount(request, kGpu));
  if (!taken) return false;
  SubtractFrom(entry->info.mutable_available(), request);
  *gpus = std::move(*taken);
  AllocationChanged(*entry);
  return true;
}

bool NodeAllocations::TryAllocateExact(const std::string& node_id, const ResourceSet& request,
                                       const std::vector<int>& gpus) {
  NodeRoster::Entry* entry = roster_->Find(node_id);
  if (!entry || !NodeRoster::TakesWork(*entry)) return false;
  if (!Fits(entry->info.available(), request)) return false;
  if (!entry->gpus.TakeExact(Amount(request, kGpu), gpus)) return false;
  SubtractFrom(entry->info.mutable_available(), request);
  AllocationChanged(*entry);
  return true;
}

std::map<int, double> NodeAllocations::GpuFree(const std::string& node_id) const {
  const NodeRoster::Entry* entry = static_cast<const NodeRoster*>(roster_)->Find(node_id);
  return entry ? entry->gpus.free() : std::map<int, double>{};
}

void NodeAllocations::Release(const std::string& node_id, int64_t incarnation, const ResourceSet& request,
                              const std::vector<int>& gpus) {
  NodeRoster::Entry* entry = roster_->Find(node_id);
  if (!entry || entry->info.incarnation() != incarnation) return;
  AddTo(entry->info.mutable_available(), request);
  // Never report more than the node has, whatever order releases come in.
  for (auto& [name, value] : *entry->info.mutable_available()->mutable_amounts()) {
    value = std::min(value, Amount(entry->info.total(), name));
  }
  entry->gpus.Give(Amount(request, kGpu), gpus);
  AllocationChanged(*entry);
}

void NodeAllocations::AllocationChanged(const NodeRoster::Entry& entry) {
  const bool now_current = now_.generation == roster_->generation();
  const bool totals_current = totals_.generation == roster_->generation();
  roster_->Reallocated();
  if (totals_current) totals_.generation = roster_->generation();  // totals do not move with allocations
  if (!now_current) return;
  auto row = now_.row_of.find(entry.info.node_id());
  if (row != now_.row_of.end()) {
    NodeCapacity& capacity = now_.rows[row->second];
    capacity.resources = Offered(entry);
    capacity.gpu_free = entry.gpus.free();
  }
  now_.generation = roster_->generation();
}

const std::vector<NodeCapacity>& NodeAllocations::Rows(PlanningRows& rows, bool as_if_idle) {
  if (rows.generation == roster_->generation()) return rows.rows;
  rows.rows.clear();
  rows.row_of.clear();
  for (const NodeInfo* node : roster_->Nodes()) {
    const NodeRoster::Entry& entry = *roster_->Find(node->node_id());
    // A node put back after a head restart takes no work until its agent is
    // back, but counts as one a job may wait for: else queued and
    // restarting jobs would turn INFEASIBLE at every head restart, until
    // their nodes had registered again.
    if (as_if_idle ? entry.info.state() != ALIVE : !NodeRoster::TakesWork(entry)) continue;
    NodeCapacity capacity = IdleCapacity(*node, entry.machine);
    if (!as_if_idle) {
      capacity.resources = Offered(entry);
      capacity.gpu_free = entry.gpus.free();
    }
    rows.row_of[node->node_id()] = rows.rows.size();
    rows.rows.push_back(std::move(capacity));
  }
  rows.generation = roster_->generation();
  return rows.rows;
}

}  // namespace clusterd
