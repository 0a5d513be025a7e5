// Backfill's reservation (docs/SHARING.md): for the first job in policy
// order that must wait, where and when it will start, from what the
// running jobs hold and when their time limits end them at the latest. A
// job behind it may start first only if that cannot delay this start: it
// runs beside the reserved nodes, or its own time limit ends it before
// the reservation starts. Pure: capacities in, a reservation out.
#pragma once

#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "cluster.pb.h"
#include "common/clock.h"
#include "daemon/head/scheduler.h"
#include "daemon/head/tracked_job.h"

namespace clusterd {

// A time that never comes: the end of a job without a time limit.
inline constexpr Micros kForever = std::numeric_limits<Micros>::max();

// A running job: the ranks it holds (its live attempt's slots: node, GPU
// devices, whether allocated), each `per_worker`, until `ends_at`. Both
// point into the job, not copied: a reservation reads thousands.
struct RunningHold {
  Micros ends_at = kForever;
  const ResourceSet* per_worker = nullptr;
  const std::vector<RankSlot>* slots = nullptr;
};

struct Reservation {
  bool known = false;          // false: no running jobs' ends make room (nothing may pass it)
  Micros starts_at = kForever; // kForever: its nodes are known, not when they are free
  std::set<std::string> nodes; // the nodes its gang is planned on then
  PlacementPlan plan;          // and how many of its workers on each
};

// When and where `gang` could start, were the running jobs to end in the
// order of their ends (ties in the order given), on `available_now`'s
// nodes. The fewest ends that make room are found by doubling, then
// halving (room only grows as jobs end), so that a cluster of 1,000 nodes
// is planned on about 2 log2(ends needed) times, and only the jobs up to
// about twice those needed are looked at.
Reservation Reserve(const GangRequest& gang, const std::vector<NodeCapacity>& available_now,
                    std::vector<RunningHold> holds);

// A running job's end by its time limit: started_at plus timeout_s; kForever without one.
Micros EndsBy(Micros started_at, double timeout_s);

}  // namespace clusterd
