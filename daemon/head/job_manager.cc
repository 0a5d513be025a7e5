#include "daemon/head/job_manager.h"

namespace clusterd {

JobManager::JobManager(const Clock* clock, const Config& config, NodeTable* nodes, JobStore* store, LogStore* logs,
                       SendFn send, BlobStore* blobs)
    : clock_(clock),
      config_(config),
      data_(blobs),
      table_(clock, config_, store),
      arrays_(&table_, [this](const std::string& id, const std::string& reason) { return Stop(id, reason); },
              [this](const std::string& id) { return Delete(id); }),
      infeasible_(&table_, nodes),
      demands_(&table_),
      results_(clock, config_, &table_, nodes, &data_),
      retention_(clock, config_, &table_, &arrays_),
      logs_(clock, config_, &table_, nodes, logs),
      launch_(config_, nodes, &data_, &logs_, send),
      retry_(clock, &table_),
      adoption_(clock, config_,
                JobAdoption::Parts{store, &table_, nodes, logs, &data_, &arrays_, &results_, &retention_,
                                   &infeasible_, &launch_},
                send, [this] { placement_.Schedule(); }),
      attempts_(clock, config_,
                JobAttempts::Parts{&table_, nodes, logs, &launch_, &retry_, &results_, &arrays_, &adoption_},
                [this] { placement_.Schedule(); }),
      interrupts_(&table_, &attempts_, &retention_, [this] { placement_.Schedule(); }),
      hang_watch_(clock, config_, &table_, nodes, &attempts_, send),
      preemption_(clock, config_, &table_, nodes, &attempts_, &launch_, send),
      queue_policy_(clock, &table_, QueuePolicySettings::FromConfigOrDefaults(config_)),
      placement_(&table_, nodes, &infeasible_, &arrays_, &attempts_, &queue_policy_),
      admission_(clock, config_, &table_, &data_, &logs_, &placement_),
      queries_(&table_, &placement_, &arrays_, &retention_, logs) {
  // Subscribed in the order SetState's effects must run: an array counts its
  // job before retention asks whether the array still runs.
  table_.Subscribe(&arrays_);
  table_.Subscribe(&infeasible_);
  table_.Subscribe(&demands_);
  table_.Subscribe(&results_);
  table_.Subscribe(&retention_);
  table_.Subscribe(&logs_);
  placement_.SetRoomMaker([this](TrackedJob& blocked) { return preemption_.MakeRoom(blocked); });
  attempts_.SetPreempted([this](TrackedJob& job) { preemption_.Requeue(job); });
}

Status JobManager::Restore() {
  RETURN_IF_ERROR(adoption_.Restore());
  preemption_.Restored();
  return Status::Ok();
}

Status JobManager::CheckSpec(const JobSpec& spec) const {
  RETURN_IF_ERROR(admission_.CheckSpec(spec));
  return preemption_.CheckSpec(spec, "");
}

Result<std::string> JobManager::Submit(const SubmitJobRequest& request, const std::string& owner) {
  RETURN_IF_ERROR(preemption_.CheckSpec(request.spec(), owner));
  return admission_.Submit(request, owner);
}

std::vector<PendingDemand> JobManager::Pending() const {
  return demands_.Summary([this](JobInfo* shown) { placement_.ExplainWait(shown); });
}

void JobManager::OnNodeRegistered(const NodeInfo& node, const RegisterNode& request) {
  adoption_.AdoptRanks(node, request);
  preemption_.OnNodeRegistered(node);
  // A new node may make infeasible jobs possible: queued again, in
  // submission order, behind what already waits.
  infeasible_.OnNodeJoined(node);
  placement_.Schedule();
}

void JobManager::OnNodeRestored(const NodeInfo& node) {
  infeasible_.OnNodeJoined(node);
  placement_.Schedule();
}

void JobManager::OnNodeDead(const NodeInfo& node) {
  // Infeasible jobs' reasons count the live nodes: brought up to date at
  // the next Tick.
  infeasible_.MarkStale();
  adoption_.OnNodeDead(node);
  preemption_.BeforeNodeDead(node);
  interrupts_.OnNodeDead(node);
  if (preemption_.AfterNodeDead(node)) placement_.Schedule();
}

void JobManager::OnRankExited(const std::string& node_id, const RankExited& message) {
  adoption_.ReleaseRemnant(node_id, message);
  preemption_.BeforeRankExited(node_id, message);
  attempts_.OnRankExited(node_id, message);
}

Micros JobManager::Tick() {
  const Micros now = clock_->NowMicros();
  NextWake wake;
  if (Micros retry = table_.journal().Tick()) wake.Want(retry);
  // First, while no job is walked: deleting finished jobs frees what a
  // walk below might point at otherwise.
  if (retention_.Retire()) wake.Want(now);
  bool queued = false;
  // Ending an attempt here may end other jobs too (a sweep's scheduler
  // stops trials); no job leaves the table during this walk. Only the
  // running and restarting have deadlines: the queue is not walked.
  for (TrackedJob* job : table_.TimedNow()) {
    if (retry_.DueNow(*job, now, &wake)) queued = true;
    if (job->active) interrupts_.CheckDeadlines(*job, now, &wake);
  }
  hang_watch_.Tick(now, &wake);
  preemption_.Tick(now, &wake);
  // Nodes joined that could not make an infeasible job fit: its reason
  // still counts the nodes as they were.
  if (infeasible_.RejudgeIfStale()) queued = true;
  if (queued) placement_.Schedule();
  return wake.at;
}

}  // namespace clusterd
