// What the job manager writes to its JobStore, and what happens when that
// fails (DESIGN rules 7 and 10). A new job is journaled whole, each later
// change of it as a delta from its previous entry (job_delta.h). A call that must be durable (submit, stop,
// delete) asks Writable() first and is refused with UNAVAILABLE when the
// journal cannot be written: the head never acknowledges what it would
// forget. Other changes (a rank exited, a metric came) happen whether or not
// they reach the disk; once a write has failed, nothing more is appended
// (later entries would build on the missing one) until a snapshot of the
// whole state, written to a fresh file and renamed into place, brings the
// journal back in step with memory. Snapshots are tried every
// journal_retry_ms from Tick, and at once by Writable(). For a store that
// can keep a call waiting while it is away (etcd: JobStore::ProbeTask), a
// retry first checks off the loop that the store answers, refusing
// meanwhile, and writes the snapshot once it does: the loop goes on
// serving reads and status while the store is away.
//
// Compaction: once the journal has grown past max(journal_compact_mb,
// journal_compact_ratio x the size of its last snapshot), the next change
// (JobChanged, AddMetric) rewrites it as a snapshot of the live state and
// appending goes on after it. So the journal stays below that threshold
// plus the largest two entries (AddJob and DeleteJob do not compact: their
// job is not yet, or still, in memory), and rewriting costs at most
// 1/(ratio-1) of the bytes appended. A journal found larger than
// journal_compact_mb at start is compacted at once.
//
// Group commit: entries are written at once but synced in batches. Every
// write asks for a sync, deferred until the work already queued on the loop
// has run (a burst of submits), then run off the loop; WhenDurable holds a
// call's acknowledgement until a sync covers what it wrote. So no
// acknowledged change is lost, and one fdatasync serves a whole burst. By
// default (tests) syncs run at once, inline.
// NOT thread-safe: the head's event loop owns it.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "cluster.pb.h"
#include "common/clock.h"
#include "common/config.h"
#include "common/status.h"
#include "daemon/head/job_store.h"
#include "journal.pb.h"

namespace clusterd {

class JobJournal {
 public:
  // Emits the entries of a snapshot, one by one: every job's whole record
  // and its metrics, enough to replay the head's state from nothing.
  using SnapshotFn = JobStore::EntrySource;

  // How syncs run. Both hooks are called on the loop.
  struct Syncing {
    // Runs fn on the loop later, after what is queued there already.
    std::function<void(std::function<void()> fn)> defer;
    // Runs sync off the loop, then done(its status) back on the loop.
    std::function<void(std::function<Status()> sync, std::function<void(Status)> done)> offload;
  };

  // REQUIRES: clock and store outlive this object.
  JobJournal(const Clock* clock, const Config& config, JobStore* store, SnapshotFn snapshot);

  // Replaces the default (sync at once, inline, which never leaves a sync
  // under way to be lost).
  void set_syncing(Syncing syncing) { syncing_ = std::move(syncing); }
  // Runs done once everything written so far is durable: at once when it
  // is. Unavailable when the sync fails: the change stays in memory and
  // reaches the journal with the snapshot that heals it, but it was not
  // made durable in time to be acknowledged.
  void WhenDurable(std::function<void(Status)> done);

  // OK when the journal can be written, if need be after writing a snapshot
  // now; else Unavailable("the head's journal cannot be written: ...").
  Status Writable();
  // A new job's whole record, durable when OK. On failure the journal
  // counts as failing and the error is Unavailable, as from Writable().
  Status AddJob(const JobInfo& info);
  // A job's record changed. Best effort: a failure is logged and remembered,
  // and a later snapshot carries the change.
  // `info` is the manager's own record: its spec is set aside while the
  // delta is made (SpecAside), and back in place when this returns.
  void JobChanged(JobInfo* info);
  // A metric report of a job. Best effort, as JobChanged.
  void AddMetric(const std::string& job_id, const MetricRecord& record);
  // A rank of a running attempt exited (RankEnd). Best effort, as JobChanged.
  void RankEnded(const std::string& job_id, const RankEnd& end);
  // A job was deleted, durable when OK (else Unavailable, as AddJob).
  Status DeleteJob(const std::string& job_id, const std::string& why);
  // The records a restarted head replayed: what later deltas build on.
  // REQUIRES: the manager holds them (a snapshot may be taken now).
  void Restored(const std::vector<const JobInfo*>& jobs);

  // Retries a failing journal when due; returns when it wants to be called
  // again (monotonic micros), 0 for no need.
  Micros Tick();

  bool ok() const { return failing_since_ == 0; }
  JournalStatus Health() const;

 private:
  // Appends unless the journal is failing; remembers a failure.
  Status Append(const JournalEntry& entry);
  void Failed(const Status& status);
  // Rewrites the journal as a snapshot of the current state; OK heals it.
  Status WriteSnapshot(const std::string& why);
  // Tries to heal a failing journal: a snapshot now, or, when the store
  // has a probe, once the probe (off the loop) found the store answering.
  void Retry();
  Status Refusal() const;
  // The journal size past which the next change compacts it.
  uint64_t CompactAt() const;
  void MaybeCompact();
  // Keeps info as the base of its job's next delta, or forgets it once the job is final.
  void Remember(const JobInfo& info);
  // Group commit (see the top of this file).
  void ScheduleSync();
  void StartSync();
  void OnSynced(uint64_t target, const Status& status);
  void ReleaseWaiters(uint64_t upto, const Status& status);

  const Clock* clock_;
  Config config_;
  JobStore* store_;
  SnapshotFn snapshot_;
  // Each unfinished job's record as the journal holds it (without spec and
  // env): what the next delta is computed against. A finished job's record
  // seldom changes again (a late checkpoint, its data evicted): such a
  // change is journaled whole, so that a head that has run a million jobs
  // does not keep a second copy of each.
  std::map<std::string, JobInfo> journaled_;
  int64_t failing_since_ = 0;  // unix ms of the first failed write; 0 while all is well
  std::string reason_;         // the latest failure
  Micros retry_at_ = 0;        // monotonic: the next snapshot attempt while failing
  int64_t snapshot_bytes_ = 0;   // the last snapshot written (0: none since start)
  uint64_t state_bytes_ = 0;     // what the journal compacts against: that snapshot, or the state restored
  int64_t snapshots_ = 0;
  int64_t last_snapshot_unix_ms_ = 0;

  Syncing syncing_;
  uint64_t written_ = 0;  // entries written since the head started
  uint64_t durable_ = 0;  // of those, how many a sync or snapshot covers
  bool sync_deferred_ = false;
  bool sync_running_ = false;
  bool probe_running_ = false;  // a retry's check of the store is off the loop
  // Calls waiting for the entry count they wrote to be durable, in order.
  std::deque<std::pair<uint64_t, std::function<void(Status)>>> waiters_;
};

}  // namespace clusterd
