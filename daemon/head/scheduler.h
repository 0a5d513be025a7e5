// Gang placement: where a job's `num_workers` ranks go, all at once or not
// at all. Pure functions over node capacities; the job manager commits a
// plan by allocating in the node table.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "cluster.pb.h"
#include "common/resources.h"

namespace clusterd {

struct NodeCapacity {
  std::string node_id;
  std::string name;
  ResourceAmounts resources;  // what may be used: available now, or total for the idle check
  std::string address;    // what the node's ranks are reached at (MASTER_ADDR, Gloo)
  std::string machine;    // nodes with the same value share a machine
  // GPU device index -> fraction free; empty: `resources`' GPU amount as whole devices.
  std::map<int, double> gpu_free;
};

struct GangRequest {
  int num_workers = 1;
  ResourceSet per_worker;
  Placement placement = PACK;
};

// Ranks per node, in node-rank order; ranks are numbered contiguously per
// node (as torchrun does: rank = first rank of the node + local rank).
struct PlacementPlan {
  struct Slot {
    std::string node_id;
    int count = 0;
  };
  std::vector<Slot> slots;
  // Set, with no slots, when the gang would fit only by spanning machines
  // with a node whose loopback address the others cannot reach.
  std::string unreachable;
};

enum class PlaceOutcome { kPlaced, kWait, kInfeasible };

struct PlaceResult {
  PlaceOutcome outcome = PlaceOutcome::kWait;
  PlacementPlan plan;
  std::string reason;  // why it waits or can never fit
};

// `node` as if nothing ran on it: its totals, every GPU free.
NodeCapacity IdleCapacity(const NodeInfo& node, const std::string& machine);

// How many workers of `per_worker` fit on `node`; GPUs as GpuSlots shares them.
int WorkersThatFit(const NodeCapacity& node, const ResourceSet& per_worker, int at_most);

// Plans the gang over `nodes` (in the order given). Empty plan if it does
// not fit. A gang that spans machines never includes a node with a loopback
// address (its ranks would get MASTER_ADDR=127.0.0.1 or bind Gloo there):
// such nodes are left out, and if the gang then does not fit the plan says
// why in `unreachable`.
PlacementPlan PlanGang(const GangRequest& request, const std::vector<NodeCapacity>& nodes);

// Places on what is available now; if that fails, checks whether the gang
// would fit on the live nodes' totals (an idle cluster): kWait if so, else
// kInfeasible. Both reasons name the shortfall. The totals are asked for
// only then: a placed job never needs them.
using NodeRowsFn = std::function<const std::vector<NodeCapacity>&()>;
PlaceResult PlaceGang(const GangRequest& request, const std::vector<NodeCapacity>& available_now,
                      const NodeRowsFn& live_totals);
inline PlaceResult PlaceGang(const GangRequest& request, const std::vector<NodeCapacity>& available_now,
                             const std::vector<NodeCapacity>& live_totals) {
  return PlaceGang(request, available_now, [&]() -> const std::vector<NodeCapacity>& { return live_totals; });
}

}  // namespace clusterd
