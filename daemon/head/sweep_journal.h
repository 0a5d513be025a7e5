// The sweeps' own journal (sweeps.journal beside the jobs'): a sweep's
// whole record at its submit, its end and a stop, a record of only the
// trials that changed otherwise (a start, a decision, an end: the record
// grows with the trials, so rewriting it per trial would be quadratic), and
// the replay of both into each sweep's latest record. Every record is
// synced at once: sweep records are few, and a submit is acknowledged only
// once it is durable. Once the file holds four times the live records (and
// 1 MiB), it is rewritten with the whole latest record of each sweep.
// NOT thread-safe: the head's event loop owns it.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "daemon/head/job_store.h"
#include "journal.pb.h"

namespace clusterd {

class SweepJournal {
 public:
  // What a compaction writes: every sweep's latest record, in submission
  // order, and the number the next sweep's id takes.
  struct Records {
    int next_sweep_number = 1;
    std::vector<const SweepInfo*> sweeps;
  };
  using RecordsFn = std::function<Records()>;

  // REQUIRES: clock and store outlive this object; `store` may be null
  // (kept in memory only).
  SweepJournal(const Clock* clock, JobStore* store, RecordsFn records);

  struct Loaded {
    std::vector<SweepInfo> sweeps;  // each one's latest record, in submission order
    int next_sweep_number = 1;      // never an id handed out before, deleted sweeps' included
  };
  Result<Loaded> Load();

  // A new sweep's record: durable when OK.
  Status RecordSubmit(const SweepInfo& info);
  // The sweep's whole record (its end, a stop); a failure is logged.
  void RecordSweep(const SweepInfo& info);
  // Only the trials at `indexes`, with the sweep's best trial.
  void RecordTrials(const SweepInfo& info, const std::vector<int>& indexes);
  // The journal rewritten with the latest record of every sweep but
  // `without` ("": all of them).
  Status Rewrite(const std::string& without);

 private:
  // Appends and syncs: durable when OK.
  Status AppendDurably(const JournalEntry& entry);
  // Appends and syncs `entry` (its failure logged), then compacts the
  // journal when it is large.
  void Record(const std::string& sweep_id, JournalEntry entry);

  const Clock* clock_;
  JobStore* store_;
  std::unique_ptr<JobStore> memory_store_;  // when none was given
  RecordsFn records_;
};

}  // namespace clusterd
