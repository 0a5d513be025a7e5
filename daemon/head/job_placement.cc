#include "daemon/head/job_placement.h"

#include <vector>

#include <fmt/format.h>

#include "daemon/head/job_shape.h"
#include "daemon/head/scheduler.h"

namespace clusterd {

void JobPlacement::Schedule() {
  JobQueue& queue = table_->queue();
  while (!queue.empty()) {
    TrackedJob* job = table_->Find(queue.front());
    if (!job || (job->info.state() != PENDING && job->info.state() != RESTARTING &&
                 job->info.state() != INFEASIBLE)) {
      queue.pop_front();
      continue;
    }
    if (arrays_->ParkedByLimit(*job)) {
      queue.pop_front();  // back at the front when one of its array ends
      continue;
    }
    const std::pair<uint64_t, uint64_t> now = {job->seq, nodes_->generation()};
    if (now == front_waited_) return;  // nothing it waits for has changed
    if (!TryStart(*job)) {
      if (job->info.state() == INFEASIBLE) {
        queue.pop_front();  // queued again by InfeasibleShapes when nodes join
        continue;
      }
      // Strict FIFO starts nothing behind a waiting job, so the victims'
      // slots stay the blocked job's until it starts on them.
      if (room_maker_) room_maker_(*job);
      front_waited_ = now;
      return;
    }
    queue.pop_front();
  }
}

bool JobPlacement::TryStart(TrackedJob& job) {
  const GangRequest request = GangOf(job.info.spec());
  PlaceResult placed = PlaceGang(request, nodes_->SchedulableNow(),
                                 [this]() -> const std::vector<NodeCapacity>& { return nodes_->SchedulableTotals(); });
  if (placed.outcome == PlaceOutcome::kPlaced) {
    std::vector<std::pair<std::string, int>> plan;
    for (const auto& slot : placed.plan.slots) plan.push_back({slot.node_id, slot.count});
    std::string refused = attempts_->Start(job, plan);
    if (refused.empty()) return true;
    placed.outcome = PlaceOutcome::kWait;
    placed.reason = refused;
  }
  JobState waiting = placed.outcome == PlaceOutcome::kInfeasible ? INFEASIBLE
                     : job.info.state() == RESTARTING        ? RESTARTING
                                                             : PENDING;
  // Journal only real changes: a queue that is re-examined on every event
  // must not write a record each time. An INFEASIBLE job that still is only
  // brings its shape's reason up to date.
  if (waiting == INFEASIBLE && job.info.state() == INFEASIBLE) {
    infeasible_->StillInfeasible(job, placed.reason);
  } else if (job.info.state() != waiting || job.info.reason() != placed.reason) {
    table_->SetState(job, waiting, placed.reason);
  }
  return false;
}

std::optional<std::string> JobPlacement::InfeasibleBecause(const TrackedJob& job) {
  const std::vector<NodeCapacity>& idle = nodes_->SchedulableTotals();
  PlaceResult placed = PlaceGang(GangOf(job.info.spec()), idle, idle);
  if (placed.outcome != PlaceOutcome::kInfeasible) return std::nullopt;
  return placed.reason;
}

void JobPlacement::MarkIfInfeasible(TrackedJob& job) {
  std::optional<std::string> why = InfeasibleBecause(job);
  if (!why) return;
  table_->SetState(job, INFEASIBLE, *why);
}

void JobPlacement::ExplainWait(JobInfo* shown) const {
  ExplainQueued(shown);
  if (shown->state() != INFEASIBLE) return;
  const TrackedJob* job = table_->Find(shown->job_id());
  if (!job) return;
  if (const std::string* reason = infeasible_->ReasonOf(*job)) shown->set_reason(*reason);
}

void JobPlacement::ExplainQueued(JobInfo* shown) const {
  const JobQueue& queue = table_->queue();
  if (shown->state() != PENDING || shown->reason() != JobQueue::kReason || queue.empty()) return;
  const std::string& first = queue.front();
  const TrackedJob* front = first == shown->job_id() ? nullptr : table_->Find(first);
  if (!front || (front->info.state() != PENDING && front->info.state() != RESTARTING)) return;
  shown->set_reason(fmt::format("queued behind {}, first in the queue, which waits ({}): jobs start in the "
                                "order they came",
                                first, front->info.reason()));
}

}  // namespace clusterd
