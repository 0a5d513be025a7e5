// Jobs on the head: the one door through which the rpc and http layers,
// HeadCore and the sweeps reach them. It only wires the job concerns
// together and forwards; each concern is its own class over the shared
// job table (job_table.h), as Ray's GCS has one manager per concern:
//   admission (job_admission.h)     placement (job_placement.h, infeasible_shapes.h)
//   attempts (job_attempts.h, job_launch.h, attempt_interrupts.h, job_retry.h)
//   results (job_results.h)         adoption after a restart (job_adoption.h)
//   retention (job_retention.h)     arrays (job_arrays.h)
//   queries and paging (job_queries.h, pending_demands.h)   logs (job_logs.h)
// Plain classes driven by events and an injected clock; they talk to node
// agents only through SendFn. NOT thread-safe: the head's event loop owns it.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "agent.pb.h"
#include "cluster.pb.h"
#include "common/clock.h"
#include "common/config.h"
#include "common/job_state.h"
#include "common/logs/log_store.h"
#include "common/status.h"
#include "daemon/head/attempt_interrupts.h"
#include "daemon/head/infeasible_shapes.h"
#include "daemon/head/job_admission.h"
#include "daemon/head/job_adoption.h"
#include "daemon/head/job_arrays.h"
#include "daemon/head/job_attempts.h"
#include "daemon/head/hang_watch.h"
#include "daemon/head/job_data.h"
#include "daemon/head/job_journal.h"
#include "daemon/head/job_launch.h"
#include "daemon/head/job_logs.h"
#include "daemon/head/job_placement.h"
#include "daemon/head/job_queries.h"
#include "daemon/head/job_results.h"
#include "daemon/head/job_retention.h"
#include "daemon/head/job_retry.h"
#include "daemon/head/job_store.h"
#include "daemon/head/job_table.h"
#include "daemon/head/node_table.h"
#include "daemon/head/pending_demands.h"
#include "daemon/head/preemption/preemption.h"
#include "daemon/head/queue_policy/queue_policy.h"
#include "daemon/store/blob_store.h"

namespace clusterd {

class JobManager {
 public:
  // The bounds of what a client reads in one reply (JobQueries).
  static constexpr int kJobsPage = JobQueries::kJobsPage;
  static constexpr int kMaxJobsPage = JobQueries::kMaxJobsPage;
  static constexpr int kMetricsPage = JobQueries::kMetricsPage;
  static constexpr int64_t kLogsReplyBytes = JobQueries::kLogsReplyBytes;
  static constexpr size_t kMaxReplyBytes = JobQueries::kMaxReplyBytes;
  // At most this many entries in Pending() (PendingDemands).
  static constexpr int kDemandShapes = PendingDemands::kShapes;

  // Sends a command to a node's agent; false when the node has no stream.
  using SendFn = JobLaunch::SendFn;

  // REQUIRES: every pointer outlives this object. `blobs` may be null (no
  // store: jobs that ship a package are refused).
  JobManager(const Clock* clock, const Config& config, NodeTable* nodes, JobStore* store, LogStore* logs,
             SendFn send, BlobStore* blobs = nullptr);
  JobManager(const JobManager&) = delete;
  JobManager& operator=(const JobManager&) = delete;

  // Replays the journal (JobAdoption); jobs under a preemption notice keep
  // their deadline (Preemption).
  Status Restore();

  // API. Submit, Stop and Delete are durable: when the journal cannot be
  // written they change nothing and return Unavailable, saying so. The
  // jobs a submit makes record `owner`, the caller's user name.
  Result<std::string> Submit(const SubmitJobRequest& request, const std::string& owner = kAdminUser);
  // Whether this head takes `spec`, as Submit checks it: the spec's own
  // checks (ValidateJobSpec) against this head's max_num_workers, and a
  // log_limit within log_limit_max_mb. A sweep asks before it takes its
  // trials; SubmitJobs asks for each job before it makes any.
  Status CheckSpec(const JobSpec& spec) const;
  // Whether `adding` more jobs may be submitted now (max_submitted_jobs and
  // max_submitted_jobs_per_user); ResourceExhausted naming the limit, the
  // count and its config key when not. Submit checks its own request (an
  // array's count at once); a call that submits many checks their sum
  // first, so that it is refused whole.
  Status AdmitJobs(int64_t adding, const std::string& owner = kAdminUser) const {
    return admission_.AdmitJobs(adding, owner);
  }
  // `reason` says who stopped it (a sweep's scheduler, or clusterctl stop).
  Result<JobInfo> Stop(const std::string& job_id, const std::string& reason = "stopped by clusterctl stop") {
    return interrupts_.Stop(job_id, reason);
  }
  // Forgets a finished job and deletes its data in the store (journalled).
  Result<JobInfo> Delete(const std::string& job_id) { return retention_.Delete(job_id); }
  // Stop, or Delete, every job of an array; a record that sums it up (the
  // array's id, STOPPED, what was done as the reason). Delete refuses,
  // deleting none, while any job of it is not final.
  Result<JobInfo> StopArray(const std::string& array_id) { return arrays_.Stop(array_id); }
  Result<JobInfo> DeleteArray(const std::string& array_id) { return arrays_.Delete(array_id); }
  // The record, with a queued job's reason naming the job it waits behind.
  Result<JobInfo> Get(const std::string& job_id) const { return queries_.Get(job_id); }
  // The id of the job submitted with spec.submission_id `submission_id`
  // (unique among the jobs held: Submit refuses a second), nullopt when none.
  std::optional<std::string> JobOfSubmission(const std::string& submission_id) const {
    return table_.JobOfSubmission(submission_id);
  }
  // Every job, in submission order (the dashboard, Prometheus).
  std::vector<JobInfo> List() const { return queries_.List(); }
  // Calls fn with every job's record in place, in no particular order.
  void ForEachJob(const std::function<void(const JobInfo&)>& fn) const {
    table_.ForEach([&](const TrackedJob& job) { fn(job.info); });
  }
  // Preemptions of the jobs held, and since the head started (Prometheus).
  int64_t PreemptionsTotal() const { return preemption_.total(); }
  // What preemption takes from the queue policy and the users (priority,
  // borrowing, admins); unset, no job outranks another.
  void set_preemption_policy(Preemption::Policy policy) { preemption_.set_policy(std::move(policy)); }
  // Told of a deadline set between ticks that the next Tick must not miss.
  void set_tick_wanted(std::function<void(Micros)> fn) { preemption_.set_tick_wanted(std::move(fn)); }
  // The queue policy (docs/SHARING.md): `clusterctl queue`, the quotas,
  // and what the identity layer (max priority, groups) and preemption
  // (IsBorrowing) are wired to.
  QueueListReply ListQueue(int limit) const { return placement_.ListQueue(limit); }
  QueuePolicy& queue_policy() { return queue_policy_; }
  bool IsBorrowing(const TrackedJob& job) const { return queue_policy_.IsBorrowing(job); }
  // A quota changed: what waited for it may start.
  void QuotasChanged() { placement_.Schedule(); }
  // Every job counted by state, with the attempts started (for Prometheus).
  JobTally Tally() const {
    JobTally tally = queries_.Tally();
    tally.preemptions = preemption_.total();
    return tally;
  }
  // Bounded replies for clients: page_size and about kMaxReplyBytes at
  // most, one item at least; tokens and offsets are checked (InvalidArgument).
  Result<ListJobsReply> ListPage(const ListJobsRequest& request) const { return queries_.ListPage(request); }
  Result<LogsReply> Logs(const LogsRequest& request) const { return queries_.Logs(request); }
  Result<MetricsReply> Metrics(const JobRequest& request) const { return queries_.Metrics(request); }
  RunningJobsReply RunningJobs(const RunningJobsRequest& request) const { return queries_.RunningJobs(request); }
  // The jobs waiting for resources summed up by what they ask, at most
  // kDemandShapes entries whatever the queue's size (PendingDemands).
  std::vector<PendingDemand> Pending() const;
  // A job's record without a copy (sweeps look at theirs after every
  // report); null for an unknown job. Valid until the next call.
  const JobInfo* InfoOf(const std::string& job_id) const {
    const TrackedJob* job = table_.Find(job_id);
    return job ? &job->info : nullptr;
  }
  // A job's metric records, in arrival order (sweeps follow their trials
  // through it); null for an unknown job. Valid until the next call.
  const std::vector<MetricRecord>* MetricsOf(const std::string& job_id) const {
    const TrackedJob* job = table_.Find(job_id);
    return job ? &job->metrics : nullptr;
  }
  // Records appended to a job's metrics in this head's life, restored ones
  // included: where a follower of MetricsOf is, as thinning
  // (job_metrics.h) drops older records and moves the rest.
  int64_t MetricsAppended(const std::string& job_id) const { return results_.MetricsAppended(job_id); }
  // Each job's newest metric report, for Prometheus.
  std::vector<std::pair<std::string, MetricRecord>> LatestMetrics() const { return queries_.LatestMetrics(); }
  // Whether the journal can be written, and its size.
  JournalStatus JournalHealth() const { return table_.journal().Health(); }
  // The journal is writable (not failing since a failed write).
  bool JournalOk() const { return table_.journal().ok(); }
  // Group commit of the journal (job_journal.h): how syncs run, and a
  // call's acknowledgement held until what it changed is durable.
  void set_journal_syncing(JobJournal::Syncing syncing) { table_.journal().set_syncing(std::move(syncing)); }
  void WhenDurable(std::function<void(Status)> done) { table_.journal().WhenDurable(std::move(done)); }

  // Events from node agents and the node table.
  void OnNodeRegistered(const NodeInfo& node, const RegisterNode& request);
  // A node offers again what it had withheld (a GPU an admin reset, a
  // node no longer DRAINING for it): infeasible jobs it may hold are
  // judged again, as when a node joins.
  void OnNodeRestored(const NodeInfo& node);
  void OnNodeDead(const NodeInfo& node);
  void OnPortReserved(const std::string& node_id, const PortReserved& message) {
    attempts_.OnPortReserved(node_id, message);
  }
  void OnRankStarted(const std::string& node_id, const RankStarted& message) {
    attempts_.OnRankStarted(node_id, message);
  }
  void OnRankExited(const std::string& node_id, const RankExited& message);
  // Hung gangs (hang_watch.h).
  void OnRankActivity(const std::string& node_id, const RankActivity& message) {
    hang_watch_.OnRankActivity(node_id, message);
  }
  void OnRanksDiagnosed(const std::string& node_id, const RanksDiagnosed& message) {
    hang_watch_.OnRanksDiagnosed(node_id, message);
  }
  void OnLog(const std::string& node_id, const LogData& message) { logs_.OnLog(node_id, message); }
  void OnMetrics(const std::string& node_id, const MetricsReport& message) { results_.OnMetrics(node_id, message); }
  void OnCheckpointStored(const std::string& node_id, const CheckpointStored& message) {
    TrackedJob* job = results_.OnCheckpointStored(node_id, message);
    // A preempted job may have waited for it to resume from it.
    if (job && preemption_.OnCheckpointSettled(*job, message)) placement_.Schedule();
  }
  // Rank 0 exited 0 and its node stores its last checkpoint before the job
  // may end: the running job's reason says so.
  void OnResultsPending(const std::string& node_id, const ResultsPending& message) {
    results_.OnResultsPending(node_id, message);
  }
  // The store let go of a job's data (an owner of JobData).
  void OnDataReleased(const std::string& owner, const std::string& why) { results_.OnDataReleased(owner, why); }

  // Job ids end with this (a random id of the head's state folder), so that
  // a head that lost its state never hands out an old run's ids again.
  // Empty: "job-0001".
  void set_cluster_id(const std::string& id) { table_.set_cluster_id(id); }
  // Blobs live in S3: the head keeps only their ids (JobData::set_external).
  void set_external_store(bool external) { data_.set_external(external); }

  // Timeouts, adoption deadlines, retries' delays, retention and a failing
  // journal; returns when it wants to run next at the latest (monotonic
  // micros), 0 for no need.
  Micros Tick();

 private:
  const Clock* clock_;
  Config config_;  // the concerns below hold references to it
  JobData data_;
  JobTable table_;
  // Each concern; those that keep indexes of jobs subscribe to the table's
  // events in the constructor, arrays before retention (which asks them).
  JobArrays arrays_;
  InfeasibleShapes infeasible_;
  PendingDemands demands_;
  JobResults results_;
  JobRetention retention_;
  JobLogs logs_;
  JobLaunch launch_;
  JobRetry retry_;
  JobAdoption adoption_;
  JobAttempts attempts_;
  AttemptInterrupts interrupts_;
  HangWatch hang_watch_;
  Preemption preemption_;
  QueuePolicy queue_policy_;  // priorities, fair share, quotas: what placement orders and starts by
  JobPlacement placement_;
  JobAdmission admission_;
  JobQueries queries_;
};

}  // namespace clusterd
