#include "daemon/head/job_manager.h"

#include <algorithm>
#include <cstdio>

#include <fmt/format.h>

#include "common/logs/attempt_banner.h"
#include "common/jobspec/env_match.h"
#include "common/jobspec/job_spec.h"
#include "common/logging.h"
#include "common/resources.h"
#include "daemon/head/job_replay.h"
#include "daemon/head/scheduler.h"

namespace clusterd {

namespace {

// Swaps `owned` into `slot` (a field of a journal entry) for a scope, and
// back on every way out of it, a throw included: the record is lent, not copied.
template <typename Message>
class Lent {
 public:
  Lent(Message* owned, Message* slot) : owned_(owned), slot_(slot) { slot_->Swap(owned_); }
  ~Lent() { slot_->Swap(owned_); }
  Lent(const Lent&) = delete;
  Lent& operator=(const Lent&) = delete;

 private:
  Message* owned_;
  Message* slot_;
};

}  // namespace

JobManager::JobManager(const Clock* clock, const Config& config, NodeTable* nodes, JobStore* store, LogStore* logs,
                       SendFn send, BlobStore* blobs)
    : clock_(clock), config_(config), nodes_(nodes), store_(store), logs_(logs), send_(std::move(send)),
      data_(blobs), journal_(clock, config, store, [this](const JobStore::EntrySink& emit) { return EmitSnapshot(emit); }),
      limits_(config) {}

JobManager::Job* JobManager::Find(const std::string& job_id) {
  auto it = jobs_.find(job_id);
  return it == jobs_.end() ? nullptr : &it->second;
}

const JobManager::Job* JobManager::Find(const std::string& job_id) const {
  auto it = jobs_.find(job_id);
  return it == jobs_.end() ? nullptr : &it->second;
}

int JobManager::JobNumber(const std::string& job_id) {
  int number = -1, end = 0;
  if (sscanf(job_id.c_str(), "job-%d%n", &number, &end) != 1 || number < 0) return -1;
  const size_t after = static_cast<size_t>(end);
  if (after == job_id.size() || (job_id[after] == '-' && after + 1 < job_id.size())) return number;
  return -1;
}

std::string JobManager::NewJobId() {
  int number = next_job_number_++;
  return cluster_id_.empty() ? fmt::format("job-{:04d}", number) : fmt::format("job-{:04d}-{}", number, cluster_id_);
}

std::optional<std::string> JobManager::JobOfSubmission(const std::string& submission_id) const {
  if (submission_id.empty()) return std::nullopt;
  auto it = by_submission_.find(submission_id);
  if (it == by_submission_.end()) return std::nullopt;
  // The entry of a job since deleted names no job, or (never: ids are not
  // handed out twice) another one.
  const Job* job = Find(it->second);
  if (!job || job->info.spec().submission_id() != submission_id) return std::nullopt;
  return it->second;
}

Status JobManager::AdmitJobs(int64_t adding) const {
  // One submitter today (SubmitLimits::TokenHolder): its jobs are all the
  // jobs not yet finished. A count per owner, kept where unfinished_ is,
  // replaces the first count once jobs have owners.
  const int64_t unfinished = static_cast<int64_t>(unfinished_.size());
  return limits_.Admit(SubmitLimits::TokenHolder(), unfinished, unfinished, adding);
}

std::vector<JobManager::Job*> JobManager::UnfinishedNow() const {
  std::vector<Job*> jobs;
  jobs.reserve(unfinished_.size());
  for (const auto& [seq, job] : unfinished_) jobs.push_back(job);
  return jobs;
}

std::vector<JobManager::Job*> JobManager::TimedNow() const {
  std::vector<Job*> jobs;
  jobs.reserve(timed_.size());
  for (const auto& [seq, job] : timed_) jobs.push_back(job);
  return jobs;
}

void JobManager::UpdateTimed(Job& job) {
  const JobState state = job.info.state();
  if (IsTerminal(state) || state == PENDING || state == INFEASIBLE) {
    timed_.erase(job.seq);
  } else {
    timed_.emplace(job.seq, &job);
  }
}

void JobManager::Persist(Job& job) { journal_.JobChanged(&job.info); }

Status JobManager::EmitSnapshot(const JobStore::EntrySink& emit) {
  const int64_t now = clock_->UnixMillis();
  JournalEntry entry;
  entry.set_unix_ms(now);
  entry.mutable_snapshot()->set_next_job_number(next_job_number_);
  entry.mutable_snapshot()->set_jobs(static_cast<int32_t>(order_.size()));
  int64_t metrics = 0;
  for (const auto& id : order_) metrics += static_cast<int64_t>(jobs_.at(id).metrics.size());
  entry.mutable_snapshot()->set_metrics(metrics);
  RETURN_IF_ERROR(emit(entry));
  for (const auto& id : order_) {
    Job& job = jobs_.at(id);
    entry.Clear();
    entry.set_unix_ms(now);
    entry.set_job_id(id);
    {
      // Lent, not copied: a copy of every record was the snapshot's cost in
      // time and, for a moment, twice the head's memory.
      Lent<JobInfo> lent(&job.info, entry.mutable_job());
      RETURN_IF_ERROR(emit(entry));
    }
    for (MetricRecord& record : job.metrics) {
      entry.Clear();
      entry.set_unix_ms(now);
      entry.set_job_id(id);
      Lent<MetricRecord> lent(&record, entry.mutable_metric());
      RETURN_IF_ERROR(emit(entry));
    }
  }
  return Status::Ok();
}

Status JobManager::NotDurable(const Status& status, const std::string& outcome) {
  return Status::Unavailable(status.message() + "; " + outcome);
}

void JobManager::SetState(Job& job, JobState state, const std::string& reason) {
  JobState from = job.info.state();
  job.info.set_state(state);
  if (from != state) {
    TallyArrayJob(job, from, -1);
    TallyArrayJob(job, state, 1);
  }
  job.info.set_reason(reason);
  if (from == INFEASIBLE && state != INFEASIBLE) LeaveInfeasible(job);
  if (state == INFEASIBLE) EnterInfeasible(job, reason);
  UpdateTimed(job);
  UpdateDemand(job);
  if (IsTerminal(state)) {
    job.info.set_end_unix_ms(clock_->UnixMillis());
    data_.Ended(job.info);
    if (!IsTerminal(from)) MarkFinished(job);
  } else {
    MarkUnfinished(job);
  }
  LOG_INFO("job {} ({}): {} -> {}{}{}", job.info.job_id(), job.info.spec().name(), JobStateName(from),
           JobStateName(state), reason.empty() ? "" : ": ", reason);
  Persist(job);
}

Result<std::string> JobManager::Submit(const SubmitJobRequest& request) {
  // The CLI validated the file, but the wire is open to any client.
  RETURN_IF_ERROR(ValidateJobSpec(request.spec(), config_.max_num_workers));
  RETURN_IF_ERROR(log_admission_.CheckSpec(request.spec()));
  const JobSpec& spec = request.spec();
  if (spec.working_dir_mode() == SHIP && !spec.working_dir().empty() && spec.package_id().empty()) {
    return Status::InvalidArgument(fmt::format(
        "job '{}' ships working_dir {} but names no package: submit it with clusterctl, which packs and uploads "
        "the folder (or set working_dir_mode: shared for a path every machine has)", spec.name(), spec.working_dir()));
  }
  // clusterctl sends only what env_passthrough matched, minus clusterd's
  // own names; any other client is held to the same rule.
  std::vector<std::string> patterns(spec.env_passthrough().begin(), spec.env_passthrough().end());
  for (const auto& [name, value] : request.passthrough_env()) {
    if (IsReservedWorkerVariable(name)) {
      return Status::InvalidArgument(fmt::format("passthrough variable {} is set by clusterd and cannot be passed", name));
    }
    if (!MatchesAnyPattern(patterns, name)) {
      return Status::InvalidArgument(fmt::format("passthrough variable {} matches no env_passthrough pattern", name));
    }
  }
  if (!spec.submission_id().empty()) {
    if (auto taken = JobOfSubmission(spec.submission_id())) {
      return Status::AlreadyExists(fmt::format("key 'submission_id': '{}' is job {}'s already; choose another",
                                               spec.submission_id(), *taken));
    }
  }
  RETURN_IF_ERROR(AdmitJobs(spec.has_array() ? spec.array().count() : 1));
  Status writable = journal_.Writable();
  if (!writable.ok()) return NotDurable(writable, "the job was not submitted");
  if (spec.has_array()) return SubmitArray(request);
  ASSIGN_OR_RETURN(std::string id, Create(request, spec));
  Schedule();
  if (Job* job = Find(id); job && job->info.state() == PENDING && job->info.reason() == kQueuedReason) {
    MarkIfInfeasible(*job);  // behind a waiting job: untried
  }
  return id;
}

namespace {

GangRequest GangOf(const JobSpec& spec) {
  GangRequest request;
  request.num_workers = spec.num_workers();
  request.per_worker = spec.resources_per_worker();
  request.placement = spec.placement();
  return request;
}

}  // namespace

std::optional<std::string> JobManager::InfeasibleBecause(const Job& job) {
  const std::vector<NodeCapacity>& idle = nodes_->SchedulableTotals();
  PlaceResult placed = PlaceGang(GangOf(job.info.spec()), idle, idle);
  if (placed.outcome != PlaceOutcome::kInfeasible) return std::nullopt;
  return placed.reason;
}

void JobManager::MarkIfInfeasible(Job& job) {
  std::optional<std::string> why = InfeasibleBecause(job);
  if (!why) return;
  SetState(job, INFEASIBLE, *why);
}

namespace {

// Jobs whose gangs ask alike: the same workers, placement and resources
// each (amounts of zero left out, as SameAmounts does). `infeasible` tells
// apart, for the demands' summary, those that cannot fit from those that wait.
std::string ShapeKey(const JobSpec& spec, bool placement, bool infeasible) {
  std::map<std::string, double> amounts;
  for (const auto& [name, value] : spec.resources_per_worker().amounts()) {
    if (value != 0) amounts[name] = value;
  }
  std::string key = fmt::format("{}|{}|{}", spec.num_workers(), placement ? static_cast<int>(spec.placement()) : -1,
                                infeasible ? 1 : 0);
  for (const auto& [name, value] : amounts) key += fmt::format("|{}={:.17g}", name, value);
  return key;
}

}  // namespace

void JobManager::EnterInfeasible(Job& job, const std::string& reason) {
  if (job.shape.empty()) job.shape = ShapeKey(job.info.spec(), /*placement=*/true, /*infeasible=*/true);
  InfeasibleShape& shape = infeasible_[job.shape];
  if (shape.jobs.empty()) shape.gang = GangOf(job.info.spec());
  shape.jobs.emplace(job.seq, job.info.job_id());
  shape.reason = reason;
}

void JobManager::LeaveInfeasible(Job& job) {
  auto shape = infeasible_.find(job.shape);
  job.shape.clear();
  if (shape == infeasible_.end()) return;
  shape->second.jobs.erase(job.seq);
  if (shape->second.jobs.empty()) infeasible_.erase(shape);
}

JobManager::InfeasibleShapes::iterator JobManager::JudgeShape(InfeasibleShapes::iterator shape, FreedJobs* freed) {
  const std::vector<NodeCapacity>& idle = nodes_->SchedulableTotals();
  PlaceResult placed = PlaceGang(shape->second.gang, idle, idle);
  if (placed.outcome == PlaceOutcome::kInfeasible) {
    shape->second.reason = placed.reason;  // counts the nodes as they are now; nothing is journalled
    return std::next(shape);
  }
  freed->insert(shape->second.jobs.begin(), shape->second.jobs.end());
  return infeasible_.erase(shape);
}

void JobManager::RequeueFreed(const FreedJobs& freed) {
  // In submission order over every shape that fits now, behind what
  // already waits. Each is a journalled change of state, once per job that
  // changes.
  for (const auto& [seq, id] : freed) {
    Job* job = Find(id);
    if (!job || job->info.state() != INFEASIBLE) continue;
    job->shape.clear();  // its shape is gone from infeasible_ already
    QueueIfAbsent(id);
    SetState(*job, PENDING, kQueuedReason);
  }
}

Result<std::string> JobManager::Create(const SubmitJobRequest& request, const JobSpec& spec) {
  Job job;
  *job.info.mutable_spec() = spec;
  job.info.set_job_id(NewJobId());
  // An array's first job names the array (Slurm's SLURM_ARRAY_JOB_ID).
  if (spec.has_array() && spec.array_id().empty()) job.info.mutable_spec()->set_array_id(job.info.job_id());
  Status held = data_.HoldPackage(job.info);
  if (!held.ok()) {
    --next_job_number_;  // the id was never handed out
    return held;
  }
  *job.info.mutable_passthrough_env() = request.passthrough_env();
  job.info.set_submit_unix_ms(clock_->UnixMillis());
  job.info.set_state(PENDING);
  job.info.set_reason(kQueuedReason);
  // Only a job the journal holds is acknowledged: a head restarted after a
  // failed write must not forget an id it handed out.
  Status recorded = journal_.AddJob(job.info);
  if (!recorded.ok()) {
    data_.Delete(job.info);  // lets the package go again
    --next_job_number_;
    return NotDurable(recorded, "the job was not submitted");
  }
  std::string id = job.info.job_id();
  LOG_INFO("job {} ({}): submitted, PENDING: queued", id, spec.name());
  if (!spec.submission_id().empty()) {
    // Deleted jobs' entries go all at once when they outnumber the jobs:
    // amortised O(1) a submit, and the index at most twice what it holds.
    if (by_submission_.size() >= 2 * jobs_.size() + 1024) {
      for (auto it = by_submission_.begin(); it != by_submission_.end();) {
        it = jobs_.count(it->second) ? std::next(it) : by_submission_.erase(it);
      }
    }
    by_submission_[spec.submission_id()] = id;
  }
  job.seq = next_seq_++;
  Job& created = jobs_.emplace(id, std::move(job)).first->second;
  TallyArrayJob(created, PENDING, 1);
  MarkUnfinished(created);
  UpdateDemand(created);
  order_.push_back(id);
  queue_.push_back(id);
  return id;
}

void JobManager::Schedule() {
  // Strict FIFO: the first job that must wait holds back the ones behind it,
  // so a large gang is not starved by a stream of small ones. Infeasible
  // jobs step aside until nodes join.
  while (!queue_.empty()) {
    Job* job = Find(queue_.front());
    if (!job || (job->info.state() != PENDING && job->info.state() != RESTARTING &&
                 job->info.state() != INFEASIBLE)) {
      queue_.pop_front();
      continue;
    }
    if (ParkedByArrayLimit(*job)) {
      queue_.pop_front();  // back at the front when one of its array ends
      continue;
    }
    const std::pair<uint64_t, uint64_t> now = {job->seq, nodes_->generation()};
    if (now == front_waited_) return;  // nothing it waits for has changed
    if (!TryStart(*job)) {
      if (job->info.state() == INFEASIBLE) {
        queue_.pop_front();  // re-queued by OnNodeRegistered
        continue;
      }
      front_waited_ = now;
      return;
    }
    queue_.pop_front();
  }
}

bool JobManager::TryStart(Job& job) {
  const GangRequest request = GangOf(job.info.spec());
  PlaceResult placed = PlaceGang(request, nodes_->SchedulableNow(),
                                 [this]() -> const std::vector<NodeCapacity>& { return nodes_->SchedulableTotals(); });
  if (placed.outcome == PlaceOutcome::kPlaced) {
    std::vector<std::pair<std::string, int>> plan;
    for (const auto& slot : placed.plan.slots) plan.push_back({slot.node_id, slot.count});
    std::string refused = StartAttempt(job, plan);
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
    EnterInfeasible(job, placed.reason);
  } else if (job.info.state() != waiting || job.info.reason() != placed.reason) {
    SetState(job, waiting, placed.reason);
  }
  return false;
}

Result<JobInfo> JobManager::Stop(const std::string& job_id, const std::string& reason) {
  Job* job = Find(job_id);
  if (!job) return UnknownJob(job_id);
  if (IsTerminal(job->info.state())) return job->info;
  // A stop the journal does not hold would be undone by a restarted head.
  Status writable = journal_.Writable();
  if (!writable.ok()) return NotDurable(writable, "the job was not stopped");
  if (job->active && job->run.ending == Ending::kFail) {
    // Found by exploratory testing: its ranks may take seconds to end (a
    // SIGTERM handler saving a checkpoint), and a stop meanwhile was
    // dropped: the job went on to its next attempts.
    job->run.ending = Ending::kStop;
    job->run.retry = false;
    job->run.ending_reason = fmt::format("{} while attempt {} was ending: {}", reason,
                                         Current(job->info).attempt(), job->run.ending_reason);
    LOG_INFO("job {}: {}", job_id, job->run.ending_reason);
  } else if (job->active) {
    EndAttempt(*job, Ending::kStop, reason);
  } else if (job->info.state() == RESTARTING) {
    job->retry_at = 0;
    job->info.set_retry_at_unix_ms(0);
    SetState(*job, STOPPED, fmt::format("{} before attempt {} started", reason, AttemptCount(job->info)));
  } else {
    SetState(*job, STOPPED, reason + " before it ran");
  }
  // A job that waited first in the queue held back those behind it.
  if (!job->active) Schedule();
  return job->info;
}



Result<JobInfo> JobManager::Get(const std::string& job_id) const {
  const Job* job = Find(job_id);
  if (!job) return UnknownJob(job_id);
  JobInfo shown = job->info;
  ExplainWait(&shown);
  return shown;
}

void JobManager::ExplainWait(JobInfo* shown) const {
  ExplainQueued(shown);
  if (shown->state() != INFEASIBLE) return;
  const Job* job = Find(shown->job_id());
  if (!job) return;
  auto shape = infeasible_.find(job->shape);
  if (shape != infeasible_.end()) shown->set_reason(shape->second.reason);
}

void JobManager::ExplainQueued(JobInfo* shown) const {
  if (shown->state() != PENDING || shown->reason() != kQueuedReason || queue_.empty()) return;
  const std::string& first = queue_.front();
  const Job* front = first == shown->job_id() ? nullptr : Find(first);
  if (!front || (front->info.state() != PENDING && front->info.state() != RESTARTING)) return;
  shown->set_reason(fmt::format("queued behind {}, first in the queue, which waits ({}): jobs start in the "
                                "order they came",
                                first, front->info.reason()));
}

std::vector<std::pair<std::string, MetricRecord>> JobManager::LatestMetrics() const {
  std::vector<std::pair<std::string, MetricRecord>> out;
  for (const auto& id : order_) {
    const Job& job = jobs_.at(id);
    if (!job.metrics.empty()) out.push_back({id, job.metrics.back()});
  }
  return out;
}

std::vector<PendingDemand> JobManager::Pending() const {
  // Shapes in the order their first waiting job was submitted.
  std::vector<std::pair<uint64_t, const std::set<uint64_t>*>> shapes;
  shapes.reserve(demands_.size());
  for (const auto& [key, seqs] : demands_) shapes.push_back({*seqs.begin(), &seqs});
  const size_t listed = std::min<size_t>(shapes.size(), kDemandShapes - (shapes.size() > kDemandShapes ? 1 : 0));
  std::partial_sort(shapes.begin(), shapes.begin() + static_cast<std::ptrdiff_t>(listed), shapes.end());
  std::vector<PendingDemand> out;
  for (size_t i = 0; i < listed; ++i) {
    const Job& first = *unfinished_.at(shapes[i].first);
    const JobInfo& info = first.info;
    PendingDemand& demand = out.emplace_back();
    demand.set_job_id(info.job_id());
    demand.set_job_name(info.spec().name());
    *demand.mutable_per_worker() = info.spec().resources_per_worker();
    demand.set_num_workers(info.spec().num_workers());
    demand.set_infeasible(info.state() == INFEASIBLE);
    demand.set_more_like_it(static_cast<int32_t>(shapes[i].second->size() - 1));
    JobInfo shown;
    shown.set_job_id(info.job_id());
    shown.set_state(info.state());
    shown.set_reason(info.reason());
    ExplainWait(&shown);
    demand.set_reason(shown.reason());
  }
  if (listed < shapes.size()) {
    int64_t other_jobs = 0;
    for (size_t i = listed; i < shapes.size(); ++i) other_jobs += static_cast<int64_t>(shapes[i].second->size());
    const size_t other_shapes = shapes.size() - listed;
    PendingDemand& rest = out.emplace_back();
    rest.set_num_workers(0);
    rest.set_more_like_it(static_cast<int32_t>(other_jobs - 1));
    rest.set_reason(fmt::format("{} more job{} of {} other shape{}, not listed", other_jobs,
                                other_jobs == 1 ? "" : "s", other_shapes, other_shapes == 1 ? "" : "s"));
  }
  return out;
}

void JobManager::UpdateDemand(Job& job) {
  const JobState state = job.info.state();
  const bool waiting = !job.active && (state == PENDING || state == INFEASIBLE || state == RESTARTING);
  std::string key = waiting ? ShapeKey(job.info.spec(), /*placement=*/false, state == INFEASIBLE) : "";
  if (key == job.demand) return;
  if (!job.demand.empty()) {
    auto it = demands_.find(job.demand);
    if (it != demands_.end()) {
      it->second.erase(job.seq);
      if (it->second.empty()) demands_.erase(it);
    }
  }
  if (!key.empty()) demands_[key].insert(job.seq);
  job.demand = std::move(key);
}

void JobManager::OnNodeRegistered(const NodeInfo& node, const RegisterNode& request) {
  AdoptRanks(node, request);
  // A new node may make infeasible jobs possible: queue them again, in
  // submission order, behind what already waits. At once only those of
  // which it can hold a worker: every worker runs on one node, so one that
  // holds none cannot make a job fit. The others' reasons (which count the
  // live nodes) are brought up to date at the next Tick, once for however
  // many nodes joined: 10,000 nodes joining past a job that asks for what
  // none has must not each look at every node again.
  // Judged by shape: a node joining costs the number of shapes, not of jobs.
  const NodeCapacity joined = IdleCapacity(node, "");
  FreedJobs freed;
  for (auto shape = infeasible_.begin(); shape != infeasible_.end();) {
    if (WorkersThatFit(joined, shape->second.gang.per_worker, 1) > 0) {
      shape = JudgeShape(shape, &freed);  // it may fit now
    } else {
      infeasible_stale_ = true;
      ++shape;
    }
  }
  RequeueFreed(freed);
  Schedule();
}

void JobManager::QueueIfAbsent(const std::string& job_id) {
  if (!queue_.Contains(job_id)) queue_.push_back(job_id);
}

void JobManager::OnLog(const std::string& node_id, const LogData& message) {
  Job* job = Find(message.job_id());
  // Only the node running that rank of the current attempt writes its log:
  // not a node cut off with an old attempt, not a made-up rank.
  if (!job || !IsCurrent(*job, message.job_id(), message.attempt())) return;
  if (!SpeaksForRank(*job, node_id, message.rank())) return;
  const AttemptInfo& attempt = Current(job->info);
  // Held to the job's log limits whatever the node sent (LogAdmission).
  std::string data = log_admission_.Admit(message.job_id(), message.attempt(), message.rank(), message.data(),
                                          job->info.spec(), attempt.ranks_size(), logs_->JobBytes(message.job_id()));
  if (data.empty()) return;
  // Each attempt's output opens with a banner (`clusterctl logs --attempt`
  // goes by it), written with the rank's first output rather than at
  // launch: a file per rank is not created on the way to starting it.
  if (job->run.bannered.insert(message.rank()).second) {
    const std::string node = message.rank() < attempt.ranks_size() ? attempt.ranks(message.rank()).node_name() : "";
    data = AttemptBanner(attempt.attempt(), node) + data;
  }
  logs_->Append(message.job_id(), message.rank(), data);
  if (logs_->WantsRoom()) MakeLogRoom();
}


}  // namespace clusterd
