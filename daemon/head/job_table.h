// The head's job table: every job it holds by id, in submission order, the
// queue of those waiting to be placed, the unfinished and the timed ones,
// and the journal each change goes to. The shared state over which each
// job concern (admission, placement, attempts, results, adoption,
// retention, arrays, queries, logs) keeps its own indexes: the table says
// what happened to a job (JobEvents) and each concern that cares keeps
// itself in step, so that no state setter reaches into another concern's
// data (freeing a job's blobs, counting an array, retiring a finished job).
// NOT thread-safe: the head's event loop owns it.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <boost/container/flat_map.hpp>

#include "cluster.pb.h"
#include "common/clock.h"
#include "common/config.h"
#include "common/job_state.h"
#include "common/status.h"
#include "daemon/head/job_journal.h"
#include "daemon/head/job_queue.h"
#include "daemon/head/job_store.h"
#include "daemon/head/tracked_job.h"

namespace clusterd {

// What the table tells the concerns that keep indexes of jobs, in the
// order they subscribed.
class JobEvents {
 public:
  virtual ~JobEvents() = default;
  // A job entered the table: made by a submit, or restored from the journal.
  virtual void OnJobAdded(TrackedJob& job) {}
  // Its state was set (changed, or set again with a new reason); it was
  // `from`. The record already holds the new state, reason and end time.
  virtual void OnStateChanged(TrackedJob& job, JobState from) {}
  // Its deletion is journalled; the job leaves the table after the call.
  virtual void OnJobRemoved(const TrackedJob& job) {}
};

// Unavailable from the journal, with what that means for the call.
inline Status NotDurable(const Status& status, const std::string& outcome) {
  return Status::Unavailable(status.message() + "; " + outcome);
}

class JobTable {
 public:
  // Job ids in submission order; a deque, as retention deletes the oldest.
  using JobOrder = std::deque<std::string>;

  // REQUIRES: clock and store outlive this object.
  JobTable(const Clock* clock, const Config& config, JobStore* store);

  // Listeners are told in the order they subscribed. REQUIRES: each
  // outlives the table's last event.
  void Subscribe(JobEvents* listener) { listeners_.push_back(listener); }

  TrackedJob* Find(const std::string& job_id);
  const TrackedJob* Find(const std::string& job_id) const;
  // Takes a job in (made, or restored): gives it its seq, puts it last in
  // submission order and tells the listeners. The caller queues it.
  TrackedJob& Add(TrackedJob job);
  // Every change of a job's state goes through here: the record, the
  // table's own indexes, the listeners, the log and the journal.
  void SetState(TrackedJob& job, JobState state, const std::string& reason);
  // Journals the job's record as it is now (a delta of its last entry).
  void Persist(TrackedJob& job) { journal_.JobChanged(&job.info); }
  // Journals the job's deletion, then tells the listeners and forgets it.
  // Changes nothing when the journal refuses. REQUIRES: the job is final.
  Status Remove(TrackedJob& job, const std::string& why);

  // A new job id: "job-0042", or "job-0042-<cluster id>". Job ids end with
  // the cluster id (a random id of the head's state folder), so that a
  // head that lost its state never hands out an old run's ids again: a new
  // job must not resume an old one's checkpoints.
  std::string NewJobId();
  // The id NewJobId just gave was never handed out: the next one reuses it.
  void ReturnJobId() { --next_job_number_; }
  // No id handed out from now on is below `number` (a restored journal).
  void KeepJobNumbersFrom(int number) { next_job_number_ = std::max(next_job_number_, number); }
  void set_cluster_id(const std::string& id) { cluster_id_ = id; }
  // The number of "job-0042" or "job-0042-<cluster id>" (NewJobId's two
  // forms): the order of submission. -1 for anything else.
  static int JobNumber(const std::string& job_id);

  // The id of the job submitted with spec.submission_id `submission_id`,
  // nullopt when none. A lookup: entries of deleted jobs are dropped as
  // they are met, and all at once when they outnumber the jobs.
  std::optional<std::string> JobOfSubmission(const std::string& submission_id) const;
  void IndexSubmission(const std::string& submission_id, const std::string& job_id);

  const Clock* clock() const { return clock_; }
  JobQueue& queue() { return queue_; }
  const JobQueue& queue() const { return queue_; }
  JobJournal& journal() { return journal_; }
  const JobJournal& journal() const { return journal_; }
  size_t size() const { return jobs_.size(); }
  // Room for `jobs` more without rehashing (a restart's million jobs).
  void Reserve(size_t jobs) { jobs_.reserve(jobs_.size() + jobs); }
  // Calls fn with every job in place, in no particular order.
  void ForEach(const std::function<void(const TrackedJob&)>& fn) const;
  void ForEachToChange(const std::function<void(TrackedJob&)>& fn);

  // Submission order.
  const JobOrder& order() const { return order_; }
  // The first job in order() whose seq is `seq` or later: found by halving.
  JobOrder::const_iterator FirstFrom(uint64_t seq) const;
  // REQUIRES: the id is in order().
  const TrackedJob& At(const std::string& job_id) const { return jobs_.at(job_id); }

  // Every job not yet in a final state, by seq (submission order): what
  // Pending and the submit limits read, so that a head that has run a
  // million jobs does not look at each of them.
  const std::map<uint64_t, TrackedJob*>& unfinished() const { return unfinished_; }
  // The unfinished jobs that are neither PENDING nor INFEASIBLE, by seq:
  // those with a live attempt (adoption deadlines, timeouts, a node's
  // death) or a retry's delay, all that Tick has to look at. A copy, so
  // that what a walk ends may leave the index as it goes.
  std::vector<TrackedJob*> TimedNow() const;

 private:
  void UpdateTimed(TrackedJob& job);
  // Emits every job's whole record and metrics: what a journal snapshot
  // holds. Each record is lent to its entry for the call, not copied.
  Status EmitSnapshot(const JobStore::EntrySink& emit);

  const Clock* clock_;
  std::vector<JobEvents*> listeners_;
  // By id, hashed: every agent message looks its job up. Node-based, so a
  // job stays where it is while others come and go (the indexes hold pointers).
  std::unordered_map<std::string, TrackedJob> jobs_;
  JobOrder order_;
  // Waiting to be placed, in the queue policy's order: by each job's
  // priority, owner and age.
  JobQueue queue_{[this](const std::string& job_id) -> std::optional<QueueKey> {
    const TrackedJob* job = Find(job_id);
    if (!job) return std::nullopt;
    return QueueKey{job->info.spec().priority(), job->info.owner(), job->seq};
  }};
  // Kept by SetState and Add; the pointers are into jobs_, and only jobs
  // in a final state are ever erased from it.
  std::map<uint64_t, TrackedJob*> unfinished_;
  // Flat: every tick and every preempting decision walk all of it, and a
  // tree's walk (a cache miss a node) was most of a walk's cost with a
  // thousand jobs running; a change moves at most a few pages of pointers.
  boost::container::flat_map<uint64_t, TrackedJob*> timed_;
  std::unordered_map<std::string, std::string> by_submission_;  // spec.submission_id -> job id
  uint64_t next_seq_ = 0;
  int next_job_number_ = 1;
  std::string cluster_id_;
  JobJournal journal_;  // last: its snapshots read the jobs above
};

}  // namespace clusterd
