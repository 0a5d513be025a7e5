// Placement: the queue of jobs waiting for resources, and gang placement
// through the scheduler over the node table (DESIGN rule 3: all members at
// once or none), in the queue policy's order (queue_policy/): priority,
// then fair share among users, then age. The first job in that order that
// must wait gets a reservation (where and when it will start, from the
// running jobs' time limits) and holds back every job behind it that
// could delay that start; one that cannot (it runs beside the reserved
// nodes, or its time limit ends it first) may start ahead of it
// (backfill). With equal priorities and one user, and jobs without time
// limits, that is strict FIFO: a large gang is not starved by a stream of
// small ones. A job over its quota waits aside, saying so, unless it may
// borrow idle room; a job that no idle cluster could hold steps aside as
// INFEASIBLE (InfeasibleShapes) and a job of a full array waits aside
// (JobArrays). Separate from admission, which decides whether a job is
// taken at all, and from the attempts, which run what this places.
// NOT thread-safe: the head's event loop owns it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "cluster.pb.h"
#include "daemon/head/infeasible_shapes.h"
#include "daemon/head/job_arrays.h"
#include "daemon/head/job_attempts.h"
#include "daemon/head/job_table.h"
#include "daemon/head/node_table.h"
#include "daemon/head/queue_policy/queue_policy.h"
#include "daemon/head/queue_policy/reservation.h"

namespace clusterd {

class JobPlacement : public JobEvents {
 public:
  // Preemption's part in placement: called for the first job in policy
  // order that must wait although an idle cluster could hold it. Returns
  // the ids of the running jobs being preempted to make room for it
  // (chosen now, or already on their way out from an earlier call for the
  // same job: the maker is idempotent per blocked job); empty when
  // preemption cannot make room. Those jobs' slots are the blocked job's:
  // nothing else is started onto them.
  using RoomMaker = std::function<std::vector<std::string>(TrackedJob& blocked)>;

  // REQUIRES: every pointer outlives this object. Without a policy it
  // keeps one of its own with the config table's defaults.
  JobPlacement(JobTable* table, NodeTable* nodes, InfeasibleShapes* infeasible, JobArrays* arrays,
               JobAttempts* attempts, QueuePolicy* policy = nullptr);

  // Starts what can start, in policy order: up to the first job that must
  // wait, then, behind it, what cannot delay it (backfill_max_jobs of them).
  void Schedule();
  // A job behind a waiting one is not tried at once: one that could not
  // fit even on an idle cluster is INFEASIBLE at once, not when its turn
  // comes. One look at the nodes' totals.
  void MarkIfInfeasible(TrackedJob& job);
  // A shown record's reason while it waits: for a job over its quota, the
  // quota; for a job queued behind a waiting one, the job it waits behind;
  // for an INFEASIBLE job, its shape's reason as last judged.
  void ExplainWait(JobInfo* shown) const;
  // Unset: nothing is preempted, a blocked job waits for jobs to end.
  void SetRoomMaker(RoomMaker maker) { room_maker_ = std::move(maker); }
  // For preemption: the job runs beyond its user's or a group's quota.
  bool IsBorrowing(const TrackedJob& job) const { return policy_->IsBorrowing(job); }

  // `clusterctl queue`: the waiting jobs in the order they would start, at
  // most `limit`, each with why it waits and when it should start.
  QueueListReply ListQueue(int limit) const;

  QueuePolicy& policy() { return *policy_; }
  const QueuePolicy& policy() const { return *policy_; }

  // Any change of a job's state may free the queue (a waiting job stopped,
  // a running one ended): the next Schedule looks again.
  void OnStateChanged(TrackedJob& job, JobState from) override { ++job_changes_; }
  void OnJobRemoved(const TrackedJob& job) override { ++job_changes_; }

 private:
  // What a pass depends on: when none of it changed, another pass would
  // start nothing.
  using PassKey = std::tuple<uint64_t, uint64_t, uint64_t, uint64_t>;
  PassKey CurrentPassKey() const;

  // Places the job on `available` (the schedulable nodes, or those beside
  // a reservation). `record_wait`: a job that cannot start has its state
  // and reason set (the first that must wait); else it is left as it is.
  bool TryStart(TrackedJob& job, const std::vector<NodeCapacity>& available, bool record_wait);
  // Only `pushed` were queued since the last pass, which left blocked_
  // waiting: when each goes behind it (a lower priority, or the same user's
  // and newer), tries just them as a pass would (quota, backfill) and
  // returns true; false when a whole pass must look.
  bool TryQueuedBehind(const std::vector<std::string>& pushed);
  // The blocked job's reservation, computed again when it or the nodes changed.
  const Reservation& ReserveFor(TrackedJob& blocked);
  // Whether the job may start now without delaying the reservation: its
  // time limit ends it before the reservation starts, or it runs beside it.
  bool TryBackfill(TrackedJob& job);
  // The schedulable nodes less the reserved ones, as they are now, those
  // with room for a worker of `per_worker` only.
  std::vector<NodeCapacity> BesideReservation(const ResourceSet& per_worker);
  std::vector<RunningHold> RunningHolds(const std::vector<std::string>& victims) const;
  void ExplainQueued(JobInfo* shown) const;
  // Why the job could not run even were every live node idle; nullopt when it could.
  std::optional<std::string> InfeasibleBecause(const TrackedJob& job);
  // PENDING or RESTARTING: what the queue holds it for.
  static bool Waits(const TrackedJob& job);

  JobTable* table_;
  NodeTable* nodes_;
  InfeasibleShapes* infeasible_;
  JobArrays* arrays_;
  JobAttempts* attempts_;
  std::unique_ptr<QueuePolicy> own_policy_;
  QueuePolicy* policy_;
  RoomMaker room_maker_;
  uint64_t job_changes_ = 0;
  std::optional<PassKey> last_pass_;

  // The first job in policy order that must wait, as the last pass left it ("": none).
  std::string blocked_;
  // Its reservation, and what it was computed for: (its seq, the nodes' membership generation).
  Reservation reservation_;
  std::pair<uint64_t, uint64_t> reserved_for_{~uint64_t{0}, ~uint64_t{0}};
  // The blocked job as it last could not start: (seq, nodes' generation);
  // until either moves, placing it again would fail again.
  std::pair<uint64_t, uint64_t> front_waited_{~uint64_t{0}, ~uint64_t{0}};
  // Shapes (TrackedJob::backfill_shape) that could not be backfilled at the
  // nodes' generation `failed_generation_`: [1] of jobs that would end
  // before the reservation's start, [0] of the others.
  std::unordered_set<std::string> failed_shapes_[2];
  uint64_t failed_generation_ = ~uint64_t{0};
  // Jobs that wait for their quota, and why, as the last pass found them.
  std::unordered_map<std::string, std::string> quota_waits_;
};

}  // namespace clusterd
