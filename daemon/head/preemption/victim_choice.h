// Which running jobs a blocked pending job preempts: pure, over node
// capacities and a summary of each running job, so that the policy is
// unit-tested without a head. docs/SHARING.md "Preemption".
//
// A job may be taken when it is preemptible and either of strictly lower
// priority than the blocked job or borrowing beyond its quota. Whole gangs
// only, the fewest that free enough room (checked with the scheduler's own
// PlanGang over the capacities as if their slots were free), chosen in
// this order: borrowing first, then the lowest priority, then the one whose
// newest stored checkpoint is most recent (the least work lost), then the
// youngest. Jobs already being preempted free their room without being
// chosen again.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cluster.pb.h"
#include "daemon/head/scheduler.h"

namespace clusterd {

// A running job as victim choice sees it.
struct RunningGang {
  std::string job_id;
  int64_t priority = 0;
  bool borrowing = false;       // runs beyond its user's or group's quota
  bool preemptible = true;      // preemptible: false, or max_preemptions reached: never chosen
  bool being_preempted = false; // noticed already: its room counts as freed
  int64_t newest_checkpoint_unix_ms = 0;  // its newest stored checkpoint; 0: none
  int64_t started_unix_ms = 0;            // its current attempt's start
  const ResourceSet* per_worker = nullptr;  // its spec's, which outlives the choice
  // Where a rank holds its share now: the job's own slot's node and
  // devices, which outlive the choice as per_worker does. Not copies: a
  // preempting decision lists every running gang's ranks.
  struct Rank {
    const std::string* node_id = nullptr;
    const std::vector<int>* gpus = nullptr;  // null: none
  };
  std::vector<Rank> ranks;
};

struct VictimChoice {
  // The gangs to preempt now, in preference order (borrowing first ...).
  std::vector<std::string> chosen;
  // Gangs already being preempted whose room the blocked job counts on.
  std::vector<std::string> under_way;
  // False: even with every eligible gang gone the job would not fit.
  bool enough = false;
};

// Whether `a` goes before `b` as a victim (the order above).
bool PreferredVictim(const RunningGang& a, const RunningGang& b);

// `available` as each node has it now (NodeTable::SchedulableNow); gangs
// on nodes missing from it (draining, dead) free nothing usable.
VictimChoice ChooseVictims(const GangRequest& blocked, int64_t blocked_priority,
                           const std::vector<NodeCapacity>& available, const std::vector<RunningGang>& running);

}  // namespace clusterd
