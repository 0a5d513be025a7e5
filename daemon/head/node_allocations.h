// Resources on the nodes: what each rank takes from its node's available
// set and GPUs (as GpuSlots shares them), given back when it ends, and the
// rows the scheduler plans on. The rows are kept between calls: an
// allocation or release updates its own node's row, anything else that
// changes the roster (a registration, a state change) rebuilds them at the
// next call, so that placing a job does not copy every node of a large
// cluster. NOT thread-safe: the head's event loop owns it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "cluster.pb.h"
#include "daemon/head/node_roster.h"
#include "daemon/head/scheduler.h"

namespace clusterd {

class NodeAllocations {
 public:
  // REQUIRES: roster outlives this object.
  explicit NodeAllocations(NodeRoster* roster) : roster_(roster) {}

  // Takes `request` from the node's available set and its GPUs (a fraction
  // of one device, or whole devices, lowest first); false, taking nothing,
  // when it does not fit or the node takes no work.
  bool TryAllocate(const std::string& node_id, const ResourceSet& request, std::vector<int>* gpus);
  // The same on exactly `gpus` (a rank adopted after a head restart keeps its devices).
  bool TryAllocateExact(const std::string& node_id, const ResourceSet& request, const std::vector<int>& gpus);
  // Gives back; a no-op on a node that has since registered again (another incarnation).
  void Release(const std::string& node_id, int64_t incarnation, const ResourceSet& request,
               const std::vector<int>& gpus);
  // The node's GPUs by device index, as fractions free (for planning).
  std::map<int, double> GpuFree(const std::string& node_id) const;

  // In the roster's order: the nodes that take work as they are now, and
  // as if idle the ALIVE ones, those put back after a head restart
  // included (a job that fits only them waits; it is not infeasible).
  const std::vector<NodeCapacity>& SchedulableNow() { return Rows(now_, /*as_if_idle=*/false); }
  const std::vector<NodeCapacity>& SchedulableTotals() { return Rows(totals_, /*as_if_idle=*/true); }

 private:
  struct PlanningRows {
    uint64_t generation = ~uint64_t{0};  // the roster's, when built
    std::vector<NodeCapacity> rows;
    std::map<std::string, size_t> row_of;  // node id -> index in rows
  };
  // Rebuilds `rows` unless current.
  const std::vector<NodeCapacity>& Rows(PlanningRows& rows, bool as_if_idle);
  // An allocation or release changed `entry`'s available resources.
  void AllocationChanged(const NodeRoster::Entry& entry);

  NodeRoster* roster_;
  PlanningRows now_, totals_;
};

}  // namespace clusterd
