#include "daemon/head/job_placement.h"

#include <algorithm>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "common/resources.h"
#include "daemon/head/job_shape.h"
#include "daemon/head/queue_policy/queue_estimates.h"
#include "daemon/head/scheduler.h"

namespace clusterd {

namespace {

QueuePolicySettings DefaultSettings() { return QueuePolicySettings::FromConfigOrDefaults(Config()); }

}  // namespace

JobPlacement::JobPlacement(JobTable* table, NodeTable* nodes, InfeasibleShapes* infeasible, JobArrays* arrays,
                           JobAttempts* attempts, QueuePolicy* policy)
    : table_(table), nodes_(nodes), infeasible_(infeasible), arrays_(arrays), attempts_(attempts),
      own_policy_(policy ? nullptr : std::make_unique<QueuePolicy>(table->clock(), table, DefaultSettings())),
      policy_(policy ? policy : own_policy_.get()) {
  table_->Subscribe(this);
  FairShare* fair_share = &policy_->fair_share();
  table_->queue().SetFairShare(
      [fair_share](const std::string& user) { return fair_share->StandingOf(user); },
      [table](const std::string& job_id) -> std::pair<double, double> {
        const TrackedJob* job = table->Find(job_id);
        if (!job) return {0, 0};
        // JobAmounts' two figures without its ResourceSet: asked for each
        // job a walk of the queue passes, where a map built and dropped
        // per job showed in the head's profile.
        const JobSpec& spec = job->info.spec();
        const double workers = spec.num_workers() > 0 ? spec.num_workers() : 1;
        return {std::max(0.0, Amount(spec.resources_per_worker(), kGpu)) * workers,
                std::max(0.0, Amount(spec.resources_per_worker(), kCpu)) * workers};
      });
}

bool JobPlacement::Waits(const TrackedJob& job) {
  const JobState state = job.info.state();
  return state == PENDING || state == RESTARTING;
}

JobPlacement::PassKey JobPlacement::CurrentPassKey() const {
  return {nodes_->generation(), table_->queue().version(), policy_->quotas().generation(), job_changes_};
}

void JobPlacement::Schedule() {
  JobQueue& queue = table_->queue();
  const PassKey key = CurrentPassKey();
  if (last_pass_ == key) return;  // nothing a pass depends on changed
  std::optional<std::vector<std::string>> pushed = queue.TakePushed();
  // Only jobs were queued since a pass that left a job waiting, and each
  // goes behind it: only they are new to try, not the whole walk again (a
  // submit into a full cluster costs one look, not backfill_max_jobs).
  if (last_pass_ && pushed && std::get<0>(*last_pass_) == std::get<0>(key) &&
      std::get<2>(*last_pass_) == std::get<2>(key) && std::get<3>(*last_pass_) == std::get<3>(key) &&
      TryQueuedBehind(*pushed)) {
    last_pass_ = CurrentPassKey();
    return;
  }
  queue.StandingsChanged();
  quota_waits_.clear();
  std::string blocked;
  std::vector<std::string> drop;  // entries to leave the queue once the walk is over
  int backfill_left = policy_->settings().backfill_max_jobs;
  int quota_held = 0;
  JobQueue::Walk walk = queue.InOrder();
  while (const std::string* id = walk.Next()) {
    TrackedJob* job = table_->Find(*id);
    if (!job || !Waits(*job)) {
      drop.push_back(*id);  // started, ended, or INFEASIBLE (queued again by InfeasibleShapes when it fits)
      continue;
    }
    if (!blocked.empty() && backfill_left-- <= 0) break;
    if (arrays_->ParkedByLimit(*job)) {
      drop.push_back(*id);  // back in the queue when one of its array ends
      continue;
    }
    std::optional<std::string> over = policy_->OverQuota(*job);
    if (over && !job->info.spec().borrow()) {
      quota_waits_[*id] = *over + ": it waits until their running jobs end, or an admin raises the quota";
      // Past backfill_max_jobs of these a pass, a user's later jobs wait
      // behind their first held one unlooked at (one user's 10,000 jobs
      // over quota must not cost a walk each pass); until then a later one
      // that fits its quota, or may borrow, still starts.
      if (++quota_held > policy_->settings().backfill_max_jobs) walk.SkipRestOfUser();
      continue;
    }
    if (!blocked.empty()) {
      if (TryBackfill(*job)) {
        drop.push_back(*id);
      } else if (job->info.state() == PENDING && job->info.reason() != JobQueue::kReason) {
        // It was first once; now another goes before it, which its shown reason names.
        table_->SetState(*job, PENDING, JobQueue::kReason);
      }
      continue;
    }
    if (over) {
      // Borrowing: only idle room, never a reservation or anyone's preemption.
      if (TryStart(*job, nodes_->SchedulableNow(), /*record_wait=*/false)) {
        drop.push_back(*id);
      } else {
        quota_waits_[*id] = *over + "; it may borrow idle room (borrow: true), and waits for some";
      }
      continue;
    }
    const std::pair<uint64_t, uint64_t> now = {job->seq, nodes_->generation()};
    if (now != front_waited_) {
      if (TryStart(*job, nodes_->SchedulableNow(), /*record_wait=*/true)) {
        drop.push_back(*id);
        continue;
      }
      if (job->info.state() == INFEASIBLE) {
        drop.push_back(*id);  // queued again by InfeasibleShapes when nodes join
        continue;
      }
      front_waited_ = {job->seq, nodes_->generation()};
    }
    blocked = *id;
    ReserveFor(*job);
  }
  for (const std::string& id : drop) queue.Remove(id);
  blocked_ = blocked;
  last_pass_ = CurrentPassKey();
}

bool JobPlacement::TryQueuedBehind(const std::vector<std::string>& pushed) {
  const TrackedJob* blocked = blocked_.empty() ? nullptr : table_->Find(blocked_);
  if (!blocked || !Waits(*blocked)) return false;
  const JobSpec& first = blocked->info.spec();
  for (const std::string& id : pushed) {
    TrackedJob* job = table_->Find(id);
    if (!job || !Waits(*job)) continue;  // dropped when a walk meets it
    const JobSpec& spec = job->info.spec();
    const bool behind = spec.priority() < first.priority() ||
                        (spec.priority() == first.priority() && job->info.owner() == blocked->info.owner() &&
                         job->seq > blocked->seq);
    if (!behind) return false;
  }
  JobQueue& queue = table_->queue();
  for (const std::string& id : pushed) {
    TrackedJob* job = table_->Find(id);
    if (!job || !Waits(*job)) continue;
    if (arrays_->ParkedByLimit(*job)) {
      queue.Remove(id);
      continue;
    }
    if (std::optional<std::string> over = policy_->OverQuota(*job); over && !job->info.spec().borrow()) {
      quota_waits_[id] = *over + ": it waits until their running jobs end, or an admin raises the quota";
      continue;
    }
    if (policy_->settings().backfill_max_jobs > 0 && TryBackfill(*job)) queue.Remove(id);
  }
  return true;
}

const Reservation& JobPlacement::ReserveFor(TrackedJob& blocked) {
  // A reservation holds while the same job waits and the same nodes take
  // work: every job started since either runs beside it or ends before it
  // starts, and jobs that end early only make room sooner. So it is worked
  // out again only then, or once its start has passed (a job outran its
  // time limit; preempted jobs, whose room it is, still leaving).
  const std::pair<uint64_t, uint64_t> key = {blocked.seq, nodes_->membership_generation()};
  const bool overdue = reservation_.known && reservation_.starts_at != kForever &&
                       table_->clock()->NowMicros() >= reservation_.starts_at;
  if (key == reserved_for_ && !overdue) return reservation_;
  std::vector<std::string> victims;
  if (room_maker_) victims = room_maker_(blocked);
  reservation_ = Reserve(GangOf(blocked.info.spec()), nodes_->SchedulableNow(), RunningHolds(victims));
  reserved_for_ = key;
  return reservation_;
}

std::vector<RunningHold> JobPlacement::RunningHolds(const std::vector<std::string>& victims) const {
  std::unordered_set<std::string> preempted(victims.begin(), victims.end());
  std::vector<RunningHold> holds;
  holds.reserve(policy_->charges().running().size());
  for (const auto& [seq, job] : policy_->charges().running()) {
    if (!job->active) continue;
    RunningHold& hold = holds.emplace_back();
    // A job being preempted for the blocked one is its room now: it ends first.
    const bool being_preempted = !preempted.empty() && preempted.count(job->info.job_id()) > 0;
    hold.ends_at = being_preempted ? 0 : EndsBy(job->run.started_at, job->info.spec().timeout_s());
    hold.per_worker = &job->info.spec().resources_per_worker();
    hold.slots = &job->run.slots;
  }
  return holds;
}

std::vector<NodeCapacity> JobPlacement::BesideReservation(const ResourceSet& per_worker) {
  // Only the nodes with room for a worker: on a full cluster a few rows,
  // not a copy of every node's.
  std::vector<NodeCapacity> beside;
  for (const NodeCapacity& node : nodes_->SchedulableNow()) {
    if (!reservation_.nodes.count(node.node_id) && WorkersThatFit(node, per_worker, 1) > 0) beside.push_back(node);
  }
  return beside;
}

bool JobPlacement::TryBackfill(TrackedJob& job) {
  // Unknown room: nothing may pass the blocked job.
  if (!reservation_.known) return false;
  if (failed_generation_ != nodes_->generation()) {
    for (auto& shapes : failed_shapes_) shapes.clear();
    failed_generation_ = nodes_->generation();
  }
  const Micros ends = EndsBy(table_->clock()->NowMicros(), job.info.spec().timeout_s());
  const bool ends_first = reservation_.starts_at != kForever && ends <= reservation_.starts_at;
  if (job.backfill_shape.empty()) job.backfill_shape = ShapeKey(job.info.spec(), /*placement=*/true, false);
  std::unordered_set<std::string>& failed = failed_shapes_[ends_first ? 1 : 0];
  if (failed.count(job.backfill_shape)) return false;
  const bool started =
      ends_first ? TryStart(job, nodes_->SchedulableNow(), /*record_wait=*/false)
                 : TryStart(job, BesideReservation(job.info.spec().resources_per_worker()), /*record_wait=*/false);
  if (started) return true;
  failed.insert(job.backfill_shape);
  failed_generation_ = nodes_->generation();
  return false;
}

bool JobPlacement::TryStart(TrackedJob& job, const std::vector<NodeCapacity>& available, bool record_wait) {
  const GangRequest request = GangOf(job.info.spec());
  PlaceResult placed = PlaceGang(request, available,
                                 [this]() -> const std::vector<NodeCapacity>& { return nodes_->SchedulableTotals(); });
  if (placed.outcome == PlaceOutcome::kPlaced) {
    std::vector<std::pair<std::string, int>> plan;
    for (const auto& slot : placed.plan.slots) plan.push_back({slot.node_id, slot.count});
    std::string refused = attempts_->Start(job, plan);
    if (refused.empty()) return true;
    placed.outcome = PlaceOutcome::kWait;
    placed.reason = refused;
  }
  if (!record_wait) return false;
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
  if (shown->state() != PENDING || shown->reason() != JobQueue::kReason) return;
  auto quota = quota_waits_.find(shown->job_id());
  if (quota != quota_waits_.end()) {
    shown->set_reason(quota->second);
    return;
  }
  if (blocked_.empty() || blocked_ == shown->job_id()) return;
  const TrackedJob* front = table_->Find(blocked_);
  if (!front || !Waits(*front)) return;
  const TrackedJob* job = table_->Find(shown->job_id());
  // Why the blocked job goes first: what the queue's order weighed.
  std::string order = "jobs start in the order they came";
  if (job && job->info.spec().priority() < front->info.spec().priority()) {
    order = fmt::format("it has priority {}, higher priorities start first", front->info.spec().priority());
  } else if (job && job->info.owner() != front->info.owner()) {
    order = fmt::format("{} has used less of their fair share", front->info.owner().empty() ? "its owner"
                                                                                             : front->info.owner());
  }
  shown->set_reason(fmt::format("queued behind {}, first in the queue, which waits ({}): {}", blocked_,
                                front->info.reason(), order));
}

QueueListReply JobPlacement::ListQueue(int limit) const {
  constexpr int kDefaultLimit = 1000;
  if (limit <= 0) limit = kDefaultLimit;
  QueueListReply reply;
  const JobQueue& queue = table_->queue();
  const Micros now = table_->clock()->NowMicros();
  const int64_t now_unix_ms = table_->clock()->UnixMillis();
  int total = 0;
  // Estimated for the first ones only: each is a reservation planned.
  constexpr int kEstimated = 200;
  QueueEstimates estimates(nodes_->SchedulableNow(), RunningHolds({}), now);
  JobQueue::Walk walk = queue.InOrder();
  while (const std::string* id = walk.Next()) {
    const TrackedJob* job = table_->Find(*id);
    if (!job || !Waits(*job)) continue;
    ++total;
    std::optional<Micros> estimate;
    if (total <= kEstimated && !quota_waits_.count(*id)) {
      estimate = estimates.Next(GangOf(job->info.spec()), job->info.spec().timeout_s());
    }
    // The first that waits: its own reservation, which counts the room of
    // the jobs being preempted for it.
    if (*id == blocked_ && reservation_.known && reservation_.starts_at != kForever) {
      estimate = std::max(now, reservation_.starts_at);
    }
    if (reply.jobs_size() >= limit) continue;
    const JobInfo& info = job->info;
    QueuedJob& row = *reply.add_jobs();
    row.set_job_id(info.job_id());
    row.set_name(info.spec().name());
    row.set_owner(info.owner());
    row.set_priority(info.spec().priority());
    row.set_num_workers(info.spec().num_workers());
    const ResourceSet amounts = JobAmounts(info.spec());
    row.set_gpus(Amount(amounts, kGpu));
    row.set_cpus(Amount(amounts, kCpu));
    row.set_state(info.state());
    row.set_borrow(info.spec().borrow());
    JobInfo shown;
    shown.set_job_id(info.job_id());
    shown.set_state(info.state());
    shown.set_reason(info.reason());
    ExplainWait(&shown);
    row.set_reason(shown.reason());
    if (estimate) row.set_estimated_start_unix_ms(now_unix_ms + (*estimate - now) / 1000);
  }
  reply.set_total(total);
  return reply;
}

}  // namespace clusterd
