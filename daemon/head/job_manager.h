// Jobs on the head: the FIFO queue, gang placement through the node table,
// attempts and their ranks, restarts from failure, stop, timeouts, metrics,
// and the journal every transition goes to. Plain class driven by events
// and an injected clock; it talks to node agents only through SendFn.
// NOT thread-safe: the head's event loop owns it.
//
// States: PENDING -> RUNNING -> SUCCEEDED | FAILED | STOPPED, with
// RUNNING -> RESTARTING -> RUNNING for each retry (attempt counts up while
// attempts <= max_failures; a retry first waits out the job's restart_delay,
// growing exponentially while attempts keep failing), and INFEASIBLE for a
// gang no live node set can hold (looked at again when nodes join).
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "agent.pb.h"
#include "cluster.pb.h"
#include "common/clock.h"
#include "common/config.h"
#include "common/job_state.h"
#include "common/status.h"
#include "daemon/head/job_journal.h"
#include "daemon/head/job_metrics.h"
#include "daemon/head/job_queue.h"
#include "daemon/head/job_store.h"
#include "common/logs/log_store.h"
#include "daemon/head/node_table.h"
#include "daemon/head/job_data.h"
#include "daemon/head/log_admission.h"
#include "daemon/head/scheduler.h"
#include "daemon/head/submit_limits.h"
#include "daemon/store/blob_store.h"

namespace clusterd {

class JobManager {
 public:
  // The bounds of what a client reads in one reply.
  static constexpr int kJobsPage = 100;                 // ListJobs' default page size
  static constexpr int kMaxJobsPage = 1000;
  static constexpr int kMetricsPage = 10000;            // GetMetrics' default and largest page size
  static constexpr int64_t kLogsReplyBytes = 1 << 20;   // GetLogs' default byte budget
  static constexpr size_t kMaxReplyBytes = 4 << 20;     // of any page, and GetLogs' largest budget

  // Sends a command to a node's agent; false when the node has no stream.
  using SendFn = std::function<bool(const std::string& node_id, const HeadMessage& message)>;

  // REQUIRES: every pointer outlives this object. `blobs` may be null (no
  // store: jobs that ship a package are refused).
  JobManager(const Clock* clock, const Config& config, NodeTable* nodes, JobStore* store, LogStore* logs,
             SendFn send, BlobStore* blobs = nullptr);

  // Replays the journal: finished jobs keep their history, queued ones
  // queue again, running ones wait for their agents to report their ranks
  // (adopted when all are alive, a failure otherwise).
  Status Restore();

  // API. Submit, Stop and Delete are durable: when the journal cannot be
  // written they change nothing and return Unavailable, saying so.
  Result<std::string> Submit(const SubmitJobRequest& request);
  // What this head refuses in a spec that the spec's own checks
  // (ValidateJobSpec) do not know: a log_limit above log_limit_max_mb. A
  // sweep asks before it takes its trials.
  Status CheckHeadLimits(const JobSpec& spec) const { return log_admission_.CheckSpec(spec); }
  // Whether `adding` more jobs may be submitted now (max_submitted_jobs and
  // max_submitted_jobs_per_user); ResourceExhausted naming the limit, the
  // count and its config key when not. Submit checks its own request (an
  // array's count at once); a call that submits many checks their sum
  // first, so that it is refused whole.
  Status AdmitJobs(int64_t adding) const;
  // `reason` says who stopped it (a sweep's scheduler, or clusterctl stop).
  Result<JobInfo> Stop(const std::string& job_id, const std::string& reason = "stopped by clusterctl stop");
  // Forgets a finished job and deletes its data in the store (journalled).
  Result<JobInfo> Delete(const std::string& job_id);
  // job_arrays.cc: Stop, or Delete, every job of an array; a record that
  // sums it up (the array's id, STOPPED, what was done as the reason).
  // Delete refuses, deleting none, while any job of it is not final.
  Result<JobInfo> StopArray(const std::string& array_id);
  Result<JobInfo> DeleteArray(const std::string& array_id);
  // The record, with a queued job's reason naming the job it waits behind.
  Result<JobInfo> Get(const std::string& job_id) const;
  // The id of the job submitted with spec.submission_id `submission_id`
  // (unique among the jobs held: Submit refuses a second), nullopt when
  // none. A scan of the jobs held, which retention bounds.
  std::optional<std::string> JobOfSubmission(const std::string& submission_id) const;
  // Every job, in submission order (the dashboard, Prometheus).
  std::vector<JobInfo> List() const;
  // Calls fn with every job's record in place, in no particular order.
  void ForEachJob(const std::function<void(const JobInfo&)>& fn) const;
  // Every job counted by state, with the attempts started (for Prometheus).
  JobTally Tally() const;
  // Bounded replies for clients (job_pages.cc): page_size and about
  // kMaxReplyBytes at most, one item at least; tokens and offsets are
  // checked (InvalidArgument).
  Result<ListJobsReply> ListPage(const ListJobsRequest& request) const;
  Result<LogsReply> Logs(const LogsRequest& request) const;
  Result<MetricsReply> Metrics(const JobRequest& request) const;
  // The jobs waiting for resources summed up by what they ask (workers,
  // resources each, INFEASIBLE or not), in the order each shape was first
  // submitted: one PendingDemand per shape, its first job's id, name and
  // reason, more_like_it counting the rest. At most kDemandShapes entries
  // whatever the queue's size: shapes past kDemandShapes - 1 are summed in
  // a last entry with num_workers 0 and a reason that counts them.
  static constexpr int kDemandShapes = 20;
  std::vector<PendingDemand> Pending() const;
  // A job's record without a copy (sweeps look at theirs after every
  // report); null for an unknown job. Valid until the next call.
  const JobInfo* InfoOf(const std::string& job_id) const {
    const Job* job = Find(job_id);
    return job ? &job->info : nullptr;
  }
  // A job's metric records, in arrival order (sweeps follow their trials
  // through it); null for an unknown job. Valid until the next call.
  const std::vector<MetricRecord>* MetricsOf(const std::string& job_id) const {
    const Job* job = Find(job_id);
    return job ? &job->metrics : nullptr;
  }
  // Records appended to a job's metrics in this head's life, restored ones
  // included: where a follower of MetricsOf is, as thinning
  // (job_metrics.h) drops older records and moves the rest.
  int64_t MetricsAppended(const std::string& job_id) const;
  // Each job's newest metric report, for Prometheus.
  std::vector<std::pair<std::string, MetricRecord>> LatestMetrics() const;
  // Whether the journal can be written, and its size.
  JournalStatus JournalHealth() const { return journal_.Health(); }
  // Group commit of the journal (job_journal.h): how syncs run, and a
  // call's acknowledgement held until what it changed is durable.
  void set_journal_syncing(JobJournal::Syncing syncing) { journal_.set_syncing(std::move(syncing)); }
  void WhenDurable(std::function<void(Status)> done) { journal_.WhenDurable(std::move(done)); }

  // Events from node agents and the node table.
  void OnNodeRegistered(const NodeInfo& node, const RegisterNode& request);
  void OnNodeDead(const NodeInfo& node);
  void OnPortReserved(const std::string& node_id, const PortReserved& message);
  void OnRankStarted(const std::string& node_id, const RankStarted& message);
  void OnRankExited(const std::string& node_id, const RankExited& message);
  void OnLog(const std::string& node_id, const LogData& message);
  void OnMetrics(const std::string& node_id, const MetricsReport& message);
  void OnCheckpointStored(const std::string& node_id, const CheckpointStored& message);
  // Rank 0 exited 0 and its node stores its last checkpoint before the job
  // may end: the running job's reason says so (not journaled: the node
  // says it again while it lasts).
  void OnResultsPending(const std::string& node_id, const ResultsPending& message);
  // The store let go of a job's data (an owner of JobData): a finished
  // job's, evicted for room (`why` ""), or any job's that lost a blob
  // (`why` says how). A code package's is not on the job's record.
  void OnDataReleased(const std::string& owner, const std::string& why);

  // Job ids end with this (a random id of the head's state folder), so that
  // a head that lost its state never hands out an old run's ids again: a
  // new job must not resume an old one's checkpoints. Empty: "job-0001".
  void set_cluster_id(const std::string& id) { cluster_id_ = id; }
  // Blobs live in S3: the head keeps only their ids (JobData::set_external).
  void set_external_store(bool external) { data_.set_external(external); }

  // Timeouts, adoption deadlines and retries of a failing journal; returns
  // when it wants to run next at the latest (monotonic micros), 0 for no need.
  Micros Tick();

 private:
  // What ends the current attempt once all its ranks are down.
  enum class Ending { kNone, kSucceed, kFail, kStop };

  struct Slot {  // one rank's share of a node, to give back
    std::string node_id;
    int64_t incarnation = 0;
    std::vector<int> gpus;
    bool allocated = false;
  };

  struct Run {  // the live attempt of a job
    std::vector<Slot> slots;       // by rank
    std::set<int> exited;          // ranks known to be down
    std::set<int> started;         // ranks known to be up
    std::set<int> bannered;        // ranks whose log has this attempt's banner line
    Ending ending = Ending::kNone;
    std::string ending_reason;
    bool port_reserved = false;
    bool retry = true;             // false: a failure ends the job whatever max_failures says
    bool node_lost = false;        // the attempt ended because a machine died, not by the job's fault
    bool uncounted = false;        // its failure does not count against max_failures (JobInfo.uncounted_failures)
    std::string outputs_manifest;  // stored by rank 0's node when it exited 0
    int64_t outputs_bytes = 0;
    std::vector<std::string> outputs_missing;
    bool adopting = false;         // restored from the journal, waiting for agents
    Micros adopt_deadline = 0;
    Micros started_at = 0;
  };

  struct Job {
    JobInfo info;
    Run run;                       // meaningful while RUNNING or stopping
    bool active = false;           // has a live attempt
    Micros retry_at = 0;           // RESTARTING: when Tick queues it again (monotonic); 0: not waiting
    std::vector<MetricRecord> metrics;
    MetricTally metric_tally;      // what taking a report needs to know of `metrics` (job_metrics.h)
    uint64_t seq = 0;              // order of submission (or of restore), for infeasible_
    // Its key in retirable_ (or array_finished_), kept: end_unix_ms may be
    // written again after it went in.
    std::pair<int64_t, uint64_t> retire_key{0, 0};
    std::string shape;             // its InfeasibleShape's key while INFEASIBLE, else ""
    std::string demand;            // its key in demands_ while it waits for resources, else ""
  };
  // What INFEASIBLE jobs ask, and why no idle cluster holds it: whether a
  // gang fits depends on its shape alone, so nodes that join or leave judge
  // each shape once, not each of 100,000 jobs that ask alike.
  struct InfeasibleShape {
    GangRequest gang;
    std::map<uint64_t, std::string> jobs;  // by Job::seq: submission order
    std::string reason;                    // as last judged
  };

  // Attempts the job has run, those summed up in older_attempts included.
  static int AttemptCount(const JobInfo& info) { return info.older_attempts().count() + info.attempts_size(); }
  // "exited with code 3", "was killed by signal 9": a rank's end in a reason.
  static std::string DescribeExit(int exit_code, int signal);
  // The newest attempt. REQUIRES: the job has one.
  static AttemptInfo& Current(JobInfo& info) { return *info.mutable_attempts()->rbegin(); }
  static const AttemptInfo& Current(const JobInfo& info) { return *info.attempts().rbegin(); }

  // job_arrays.cc: an array's jobs, and its max_concurrent.
  // Makes the array's jobs from a checked request; the first one's id.
  Result<std::string> SubmitArray(const SubmitJobRequest& request);
  // Every change of Job::active goes through here, so that each array
  // knows how many of its jobs run.
  void SetActive(Job& job, bool active);
  // A job of an array that already runs max_concurrent waits aside
  // (PENDING, saying why) instead of holding the queue; true if it did.
  bool ParkedByArrayLimit(Job& job);

  // job_manager.cc: queue and API.
  // Makes one job from a checked request (with `spec`, which may differ
  // from the request's for an array's job) and queues it; its id. The
  // caller schedules, once for however many it made: an array's jobs
  // queued behind a waiting one would each look at every node again.
  Result<std::string> Create(const SubmitJobRequest& request, const JobSpec& spec);
  void Schedule();
  // Puts a job at the back of the queue unless it is in it already.
  // O(1): JobQueue counts its entries by id.
  void QueueIfAbsent(const std::string& job_id);
  // INFEASIBLE jobs, grouped by what their gang asks (InfeasibleShape):
  // SetState keeps every INFEASIBLE job in its shape's group and no other.
  void EnterInfeasible(Job& job, const std::string& reason);
  void LeaveInfeasible(Job& job);
  // Judges a shape again against the live nodes: when it fits an idle
  // cluster now, it leaves infeasible_ and its jobs go to `freed`, for
  // RequeueFreed; else only the shape's reason changes. The nodes are
  // looked at once for the shape, however many jobs it has. Returns the
  // next shape.
  using InfeasibleShapes = std::map<std::string, InfeasibleShape>;
  using FreedJobs = std::map<uint64_t, std::string>;  // by Job::seq
  InfeasibleShapes::iterator JudgeShape(InfeasibleShapes::iterator shape, FreedJobs* freed);
  // Queues the freed jobs again, PENDING, in submission order.
  void RequeueFreed(const FreedJobs& freed);
  bool TryStart(Job& job);
  // What a job waiting in the queue ("queued") waits for: strict FIFO, so
  // the first job in the queue, which must wait, holds back those behind
  // it. Shown only (Get, ListPage): the journal keeps "queued", so that
  // the queue moving writes nothing.
  static constexpr const char* kQueuedReason = "queued";
  void ExplainQueued(JobInfo* shown) const;
  // Strict FIFO leaves a job behind a waiting one untried: one that could
  // not fit even on an idle cluster is INFEASIBLE at once (DESIGN rule 3),
  // not when it reaches the front. One look at the nodes' totals.
  void MarkIfInfeasible(Job& job);
  // Why the job could not run even were every live node idle; nullopt when it could.
  std::optional<std::string> InfeasibleBecause(const Job& job);
  // A shown record's reason while it waits: ExplainQueued, and for an
  // INFEASIBLE job its shape's reason as last judged (the record keeps the
  // reason it had when it became INFEASIBLE: nodes coming and going write
  // nothing per job).
  void ExplainWait(JobInfo* shown) const;
  void SetState(Job& job, JobState state, const std::string& reason);
  void Persist(Job& job);
  // Emits every job's whole record and metrics: what a journal snapshot
  // holds. Each record is lent to its entry for the call, not copied.
  Status EmitSnapshot(const JobStore::EntrySink& emit);
  // Unavailable from the journal, with what that means for the call.
  static Status NotDurable(const Status& status, const std::string& outcome);
  Job* Find(const std::string& job_id);
  const Job* Find(const std::string& job_id) const;
  std::string NewJobId();
  // The number of "job-0042" or "job-0042-<cluster id>" (NewJobId's two
  // forms): the order of submission. -1 for anything else.
  static int JobNumber(const std::string& job_id);
  // Job ids in submission order; a deque, as retention deletes the oldest.
  using JobOrder = std::deque<std::string>;
  // job_pages.cc: the first job in order_ whose seq is `seq` or later.
  JobOrder::const_iterator FirstFrom(uint64_t seq) const;
  // Where the page after `token` (a job id, number `last`) starts in order_.
  JobOrder::const_iterator PageStart(const std::string& token, int last) const;
  // The states of the array whose first listed job is at `first` (its jobs
  // are neighbours in order_); *last: where its last job is.
  ArrayStates CountArray(JobOrder::const_iterator first, JobOrder::const_iterator* last) const;
  // Jobs not yet final, in submission order: a copy, so that what a walk
  // ends may leave unfinished_ as it goes.
  std::vector<Job*> UnfinishedNow() const;
  // The same of timed_ (running, or restarting): what Tick and a node's
  // death walk, not the whole queue.
  std::vector<Job*> TimedNow() const;
  // Keeps timed_ in step with the job's state (SetState, Restore).
  void UpdateTimed(Job& job);
  // Keeps demands_ in step with the job's state (SetState, Create, Restore).
  void UpdateDemand(Job& job);

  // job_arrays.cc: counts the job `delta` times in `state` in its array's tally.
  void TallyArrayJob(const Job& job, JobState state, int delta);
  // Whether the array has a job that is not final.
  bool ArrayRuns(const std::string& array_id) const;
  // The ids of the array's jobs the head has, in submission order;
  // NotFound when it has no such array.
  Result<std::vector<std::string>> ArrayJobs(const std::string& array_id) const;

  // job_retention.cc: which finished jobs the head keeps.
  // The job is not final (made, restored, or back from final): it is in
  // unfinished_, and no longer retirable.
  void MarkUnfinished(Job& job);
  // The job is final (or restored final): it leaves unfinished_, and
  // becomes one retention may delete, unless it is a sweep's trial or its
  // array still has jobs that are not (then with the array's last one).
  void MarkFinished(Job& job);
  // Deletes the jobs that finished first beyond max_finished_jobs, once
  // they have been final for min_finished_job_age_s, a batch at most (each
  // a journal entry); true if more are left for the next tick.
  // Only between events: no caller may hold a Job of those it deletes.
  bool Retire();
  // The job leaves retirable_ and array_finished_ (where it is in either).
  void NotRetirable(const Job& job);
  // Journals the job's deletion, then forgets it, its logs and its data.
  // Changes nothing when the journal refuses. REQUIRES: the job is final.
  Status Forget(Job& job, const std::string& why);
  // NotFound for an id the head does not have, saying when it may have been
  // deleted by retention.
  Status UnknownJob(const std::string& job_id) const;

  // job_log_room.cc: the head's log store under log_store_limit_mb, and
  // log_store_min_free_mb free on its disk. Once it wants room
  // (LogStore::WantsRoom), the logs of the jobs that finished first go
  // (never a running job's) until it has room again; each such job's
  // record says so (logs_released).
  void MakeLogRoom();
  Micros log_room_looked_ = 0;  // when MakeLogRoom last found nothing to remove

  // job_attempts.cc: one attempt's life (and job_results.cc: its reports,
  // checkpoints and outputs; job_adoption.cc: Restore, Tick, AdoptRanks).
  // Starts an attempt on `plan`; "" when it started, else why not (an
  // allocation failed: nothing was taken and the job keeps waiting).
  std::string StartAttempt(Job& job, const std::vector<std::pair<std::string, int>>& plan);
  // Sums up the oldest attempts until one more fits under max_attempts_kept.
  void FoldOldAttempts(JobInfo& info) const;
  void Launch(Job& job);
  bool CheckpointsViaStore(const JobSpec& spec) const;
  // Sets the new attempt's restored_checkpoint: what its ranks resume from.
  void ChooseRestore(Job& job);
  void EndAttempt(Job& job, Ending ending, const std::string& reason);
  void MarkExited(Job& job, int rank);
  void MaybeFinish(Job& job);
  // After a failed attempt that will be retried: waits out the job's
  // restart_delay in RESTARTING (Tick queues it), or queues it at once.
  void Retry(Job& job, int attempt, const std::string& failure);
  void ReleaseSlots(Job& job);
  void KillRanks(Job& job);
  bool IsCurrent(const Job& job, const std::string& job_id, int attempt) const;
  // Whether `node_id` runs `rank` of the job's current attempt: what an agent
  // says about a rank counts only from there.
  bool RunsRank(const Job& job, const std::string& node_id, int rank) const;
  // Whether a checkpoint that `node_id` stored for `attempt` is taken: from
  // the current attempt's rank 0; or from an earlier attempt's rank 0 whose
  // upload finished after that attempt ended (a rank failed right after a
  // checkpoint), while the job goes on and no later attempt has stored one.
  bool TakesCheckpoint(const Job& job, const std::string& node_id, int attempt) const;
  // Records on the job that `message`'s checkpoint was not stored, and why.
  void Refused(Job& job, const CheckpointStored& message, const std::string& why);
  // The name of the node rank 0 of `attempt` ran on ("" when not recorded).
  static std::string NodeNameOf(const Job& job, int attempt);
  // Keeps rank 0's outputs when the attempt succeeded; says what is missing.
  std::string KeepOutputs(Job& job);
  // A node of the current attempt could not restore stored checkpoint
  // `manifest_id`, which the store lacks: dropped (JobData), journalled;
  // what the attempt's reason adds ("" when it stays).
  std::string DropLostCheckpoint(Job& job, const std::string& manifest_id, const std::string& node_name);
  void AdoptRanks(const NodeInfo& node, const RegisterNode& request);
  // While adopting: takes the exit of a rank that ended while the head was
  // away, from the node the journal placed it on; false if it is not that node.
  bool AdoptExitedRank(Job& job, const std::string& node_id, int rank);
  // Whether the journal placed that rank of the current attempt on `node_id`'s node.
  bool PlacedOn(const Job& job, const std::string& node_id, int rank) const;
  // RunsRank, or, while adopting, the node the journal placed the rank on: a
  // rank that exited while the head was away holds no slot until its exit,
  // which its agent sends after what it kept (its log, its reports, a
  // stored checkpoint).
  bool SpeaksForRank(const Job& job, const std::string& node_id, int rank) const;
  // An orphaned rank (of an attempt that is over) on a node that registered
  // again holds its share until it exits.
  void HoldRemnant(const NodeInfo& node, const LiveRank& live);
  void ReleaseRemnant(const std::string& node_id, const RankExited& message);

  const Clock* clock_;
  Config config_;
  NodeTable* nodes_;
  JobStore* store_;
  LogStore* logs_;
  LogAdmission log_admission_{config_};  // reads config_, declared before it
  SendFn send_;
  JobData data_;
  JobJournal journal_;
  // By id, hashed: every agent message looks its job up. Node-based, so a
  // Job stays where it is while others come and go (unfinished_ holds pointers).
  std::unordered_map<std::string, Job> jobs_;
  JobOrder order_;                   // submission order, for List()
  JobQueue queue_;                   // waiting to be placed, FIFO
  // The queue's first job as it last could not start (its seq) and the
  // node table's generation then: until either moves, placing it again
  // would fail again, and a submit behind it need not look at every node.
  std::pair<uint64_t, uint64_t> front_waited_{~uint64_t{0}, ~uint64_t{0}};
  // Nodes joined or left since the INFEASIBLE shapes' reasons were made
  // (see OnNodeRegistered); the next Tick judges every shape again.
  bool infeasible_stale_ = false;
  // Every INFEASIBLE job, by its gang's shape key (ShapeKey in job_manager.cc): a
  // node that joins looks at the shapes, not at every job.
  InfeasibleShapes infeasible_;
  // spec.submission_id -> the job that has it: Submit's check for a taken
  // one is a lookup. Entries of deleted jobs are dropped as they are met,
  // and all at once when they outnumber the jobs (Create).
  std::unordered_map<std::string, std::string> by_submission_;
  SubmitLimits limits_;
  // Every job not yet in a final state, by Job::seq (submission order):
  // what Tick and Pending walk, so that a head that has run a million jobs
  // does not look at each of them at every tick and `clusterctl status`.
  // Kept by MarkUnfinished and MarkFinished; the pointers are into jobs_, and
  // only jobs in a final state are ever erased from it.
  std::map<uint64_t, Job*> unfinished_;
  // The unfinished jobs that are neither PENDING nor INFEASIBLE, by
  // Job::seq: those with a live attempt (adoption deadlines, timeouts, a
  // node's death) or a retry's delay, all that Tick has to look at. A job
  // has a live attempt only while RUNNING or RESTARTING. Jobs waiting in
  // the queue are not here, so 100,000 of them cost a Tick nothing.
  std::map<uint64_t, Job*> timed_;
  // The jobs waiting for resources (PENDING, INFEASIBLE or RESTARTING
  // without a live attempt) by what they ask (ShapeKey without placement),
  // each a set of Job::seq: Pending() reads a count and a first job per
  // shape, not the whole queue, at every `clusterctl status` and every
  // poll of the dashboard.
  std::unordered_map<std::string, std::set<uint64_t>> demands_;
  uint64_t next_seq_ = 0;
  // Finished jobs that retention may delete, those that ended first first:
  // by (end_unix_ms, Job::seq).
  using RetireKey = std::pair<int64_t, uint64_t>;
  std::map<RetireKey, std::string> retirable_;
  // Each array's jobs the head has, counted by state, and the first and
  // last one's seq (they are neighbours in order_; those between, deleted
  // or not, are its own): what a grouped listing reports, where the array
  // is once its first job is deleted, and whether it still runs, without a
  // walk of its jobs.
  struct ArrayTally {
    std::map<JobState, int> by_state;
    uint64_t first_seq = ~uint64_t{0};
    uint64_t last_seq = 0;
  };
  std::unordered_map<std::string, ArrayTally> array_tallies_;
  // An array's finished jobs wait here while any of its jobs is not final,
  // so that a running array, and a `submit --follow` of it, always sees all
  // of its jobs; they become retirable with its last one.
  std::unordered_map<std::string, std::vector<std::pair<RetireKey, std::string>>> array_finished_;
  int highest_retired_ = -1;  // the highest job number retention deleted since this head started
  int64_t metric_seq_ = 0;  // the last MetricRecord.received_seq given, over every job and restart
  std::map<std::string, int> array_running_;                  // array id -> its jobs with a live attempt
  std::map<std::string, std::deque<std::string>> array_parked_;  // array id -> jobs waiting for one of them to end
  int next_job_number_ = 1;
  std::string cluster_id_;
  // (node, job, attempt, rank) -> the share of a rank that outlived its attempt.
  std::map<std::tuple<std::string, std::string, int, int>, Slot> remnants_;
};


}  // namespace clusterd
