// Placement: the queue of jobs waiting for resources, and gang placement
// through the scheduler over the node table (DESIGN rule 3: all members at
// once or none). Strict FIFO: the first job that must wait holds back the
// ones behind it, so a large gang is not starved by a stream of small
// ones; a job that no idle cluster could hold steps aside as INFEASIBLE
// (InfeasibleShapes) and a job of a full array waits aside (JobArrays).
// Separate from admission, which decides whether a job is taken at all,
// and from the attempts, which run what this places.
// NOT thread-safe: the head's event loop owns it.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cluster.pb.h"
#include "daemon/head/infeasible_shapes.h"
#include "daemon/head/job_arrays.h"
#include "daemon/head/job_attempts.h"
#include "daemon/head/job_table.h"
#include "daemon/head/node_table.h"

namespace clusterd {

class JobPlacement {
 public:
  // Preemption's part in placement: called for the first job in policy
  // order that must wait although an idle cluster could hold it. Returns
  // the ids of the running jobs being preempted to make room for it
  // (chosen now, or already on their way out from an earlier call for the
  // same job: the maker is idempotent per blocked job); empty when
  // preemption cannot make room. Those jobs' slots are the blocked job's:
  // nothing else is started onto them.
  using RoomMaker = std::function<std::vector<std::string>(TrackedJob& blocked)>;

  // REQUIRES: every pointer outlives this object.
  JobPlacement(JobTable* table, NodeTable* nodes, InfeasibleShapes* infeasible, JobArrays* arrays,
               JobAttempts* attempts)
      : table_(table), nodes_(nodes), infeasible_(infeasible), arrays_(arrays), attempts_(attempts) {}

  // Starts what can start, from the queue's front, until a job must wait.
  void Schedule();
  // Strict FIFO leaves a job behind a waiting one untried: one that could
  // not fit even on an idle cluster is INFEASIBLE at once, not when it
  // reaches the front. One look at the nodes' totals.
  void MarkIfInfeasible(TrackedJob& job);
  // A shown record's reason while it waits: for a job queued behind a
  // waiting one, the job it waits behind; for an INFEASIBLE job, its
  // shape's reason as last judged.
  void ExplainWait(JobInfo* shown) const;
  // Unset: nothing is preempted, a blocked job waits for jobs to end.
  void SetRoomMaker(RoomMaker maker) { room_maker_ = std::move(maker); }

 private:
  bool TryStart(TrackedJob& job);
  void ExplainQueued(JobInfo* shown) const;
  // Why the job could not run even were every live node idle; nullopt when it could.
  std::optional<std::string> InfeasibleBecause(const TrackedJob& job);

  JobTable* table_;
  NodeTable* nodes_;
  InfeasibleShapes* infeasible_;
  JobArrays* arrays_;
  JobAttempts* attempts_;
  RoomMaker room_maker_;
  // The queue's first job as it last could not start (its seq) and the
  // node table's generation then: until either moves, placing it again
  // would fail again, and a submit behind it need not look at every node.
  std::pair<uint64_t, uint64_t> front_waited_{~uint64_t{0}, ~uint64_t{0}};
};

}  // namespace clusterd
