#include "daemon/head/infeasible_shapes.h"

#include "daemon/head/job_shape.h"

namespace clusterd {

void InfeasibleShapes::OnJobAdded(TrackedJob& job) {
  if (job.info.state() != INFEASIBLE) return;
  Enter(job, job.info.reason());
  stale_ = true;
}

void InfeasibleShapes::OnStateChanged(TrackedJob& job, JobState from) {
  const JobState state = job.info.state();
  if (from == INFEASIBLE && state != INFEASIBLE) Leave(job);
  if (state == INFEASIBLE) Enter(job, job.info.reason());
}

const std::string* InfeasibleShapes::ReasonOf(const TrackedJob& job) const {
  auto shape = shapes_.find(job.shape);
  return shape == shapes_.end() ? nullptr : &shape->second.reason;
}

void InfeasibleShapes::Enter(TrackedJob& job, const std::string& reason) {
  if (job.shape.empty()) job.shape = ShapeKey(job.info.spec(), /*placement=*/true, /*infeasible=*/true);
  Shape& shape = shapes_[job.shape];
  if (shape.jobs.empty()) shape.gang = GangOf(job.info.spec());
  shape.jobs.emplace(job.seq, job.info.job_id());
  shape.reason = reason;
}

void InfeasibleShapes::Leave(TrackedJob& job) {
  auto shape = shapes_.find(job.shape);
  job.shape.clear();
  if (shape == shapes_.end()) return;
  shape->second.jobs.erase(job.seq);
  if (shape->second.jobs.empty()) shapes_.erase(shape);
}

InfeasibleShapes::Shapes::iterator InfeasibleShapes::Judge(Shapes::iterator shape, FreedJobs* freed) {
  const std::vector<NodeCapacity>& idle = nodes_->SchedulableTotals();
  PlaceResult placed = PlaceGang(shape->second.gang, idle, idle);
  if (placed.outcome == PlaceOutcome::kInfeasible) {
    shape->second.reason = placed.reason;  // counts the nodes as they are now; nothing is journalled
    return std::next(shape);
  }
  freed->insert(shape->second.jobs.begin(), shape->second.jobs.end());
  return shapes_.erase(shape);
}

void InfeasibleShapes::RequeueFreed(const FreedJobs& freed) {
  // In submission order over every shape that fits now, behind what
  // already waits. Each is a journalled change of state, once per job that
  // changes.
  for (const auto& [seq, id] : freed) {
    TrackedJob* job = table_->Find(id);
    if (!job || job->info.state() != INFEASIBLE) continue;
    job->shape.clear();  // its shape is gone from shapes_ already
    if (!table_->queue().Contains(id)) table_->queue().push_back(id);
    table_->SetState(*job, PENDING, JobQueue::kReason);
  }
}

void InfeasibleShapes::OnNodeJoined(const NodeInfo& node) {
  // 10,000 nodes joining past a job that asks for what none has must not
  // each look at every node again: a node joining costs the number of
  // shapes, not of jobs.
  const NodeCapacity joined = IdleCapacity(node, "");
  FreedJobs freed;
  for (auto shape = shapes_.begin(); shape != shapes_.end();) {
    if (WorkersThatFit(joined, shape->second.gang.per_worker, 1) > 0) {
      shape = Judge(shape, &freed);  // it may fit now
    } else {
      stale_ = true;
      ++shape;
    }
  }
  RequeueFreed(freed);
}

bool InfeasibleShapes::RejudgeIfStale() {
  if (!stale_) return false;
  stale_ = false;
  FreedJobs freed;
  for (auto shape = shapes_.begin(); shape != shapes_.end();) shape = Judge(shape, &freed);
  RequeueFreed(freed);
  return true;
}

}  // namespace clusterd
