// Where the head's job manager persists job transitions and metrics
// (DESIGN rule 7). Injected: FileJobStore in the daemon, MemoryJobStore in
// tests. Append writes an entry; it is durable once a sync made after it
// (SyncTask) has returned OK: group commit, one fdatasync for every entry
// of a burst (JobJournal decides when). Compact is durable when it returns.
// A failure returns a Status (IOError) and the caller decides what to do,
// nothing aborts.
// NOT thread-safe: driven from the head's one event-loop thread; only the
// function SyncTask returns may run on another thread.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "daemon/head/journal.h"
#include "journal.pb.h"

namespace clusterd {

class JobStore {
 public:
  virtual ~JobStore() = default;
  // Writes one entry after everything appended before it (not yet synced).
  virtual Status Append(const JournalEntry& entry) = 0;
  // A sync of everything appended so far, to run on any thread, later: it
  // must not touch the store's members (FileJobStore: an fdatasync of its
  // own dup of the journal's descriptor, so a compaction meanwhile is safe).
  virtual std::function<Status()> SyncTask() = 0;
  // After a failure: a check, to run off the loop like a sync, that the
  // store can be written again, for a store whose calls may wait long while
  // it cannot (etcd away: each call waits out its deadline). The journal's
  // retry then writes its snapshot on the loop only once the check passed,
  // so the loop does not stall on a store that is away. Null (the default):
  // nothing to wait for, the snapshot itself is the check (a file).
  virtual std::function<Status()> ProbeTask() { return nullptr; }
  // Every entry persisted so far, in append order.
  virtual Result<std::vector<JournalEntry>> LoadAll() = 0;
  // Takes one entry; an error stops the source, which returns it.
  using EntrySink = std::function<Status(const JournalEntry&)>;
  // Calls emit with each entry in turn (an entry need live only through its call).
  using EntrySource = std::function<Status(const EntrySink& emit)>;
  // Replaces everything persisted with exactly the entries `source` emits,
  // atomically: on failure (the source's included) the old entries are
  // still there, nothing half-replaced. After success, appends go on after
  // them. Entries are written as they come: a snapshot of a large state is
  // never held whole in memory.
  virtual Status CompactFrom(const EntrySource& source) = 0;
  // The same with the entries in hand.
  Status Compact(const std::vector<JournalEntry>& entries);
  // Bytes the persisted entries take (with their framing).
  virtual uint64_t bytes() const = 0;
};

// A JobStore over one journal file (see journal.h for the format and for
// what happens to a torn or corrupt tail at Open).
class FileJobStore : public JobStore {
 public:
  // Opens or creates the journal at `path`, repairing its tail.
  static Result<std::unique_ptr<FileJobStore>> Open(const std::string& path);

  Status Append(const JournalEntry& entry) override;
  std::function<Status()> SyncTask() override;
  // Re-reads the file. Corruption if a checksum-valid record does not parse
  // as a JournalEntry (written by something else), with its index.
  Result<std::vector<JournalEntry>> LoadAll() override;

  // Replaces the journal with exactly what `source` emits (e.g. the latest
  // record per job), atomically via rename (JournalRewrite), then reopens it
  // for appending. This also heals a writer that refuses appends after a
  // failed sync: the new file holds only what was synced.
  Status CompactFrom(const EntrySource& source) override;
  uint64_t bytes() const override { return writer_ ? writer_->size() : 0; }

  const std::string& path() const { return path_; }

 private:
  FileJobStore(std::string path, std::unique_ptr<JournalWriter> writer);

  std::string path_;
  std::unique_ptr<JournalWriter> writer_;  // null only after a failed Compact reopen
};

// In-memory twin for tests, with switches that make calls fail.
class MemoryJobStore : public JobStore {
 public:
  // While set, Append and Compact return IOError and change nothing.
  void set_fail_appends(bool fail) { fail_appends_ = fail; }
  // While set, LoadAll returns IOError.
  void set_fail_loads(bool fail) { fail_loads_ = fail; }
  // While set, the sync tasks made from now on return IOError.
  void set_fail_syncs(bool fail) { fail_syncs_ = fail; }
  // How many sync tasks have run (and succeeded).
  int syncs() const { return *syncs_; }
  // Makes ProbeTask return `probe` (a store that must be checked off the
  // loop after a failure); null: none, as a file.
  void set_probe(std::function<Status()> probe) { probe_ = std::move(probe); }

  Status Append(const JournalEntry& entry) override;
  std::function<Status()> SyncTask() override;
  std::function<Status()> ProbeTask() override { return probe_; }
  Result<std::vector<JournalEntry>> LoadAll() override;
  Status CompactFrom(const EntrySource& source) override;
  // As a FileJobStore would count them: payload plus an 8-byte header each.
  uint64_t bytes() const override { return bytes_; }

  const std::vector<JournalEntry>& entries() const { return entries_; }

 private:
  std::vector<JournalEntry> entries_;
  uint64_t bytes_ = kJournalHeaderBytes;
  bool fail_appends_ = false;
  bool fail_loads_ = false;
  bool fail_syncs_ = false;
  std::function<Status()> probe_;
  std::shared_ptr<std::atomic<int>> syncs_ = std::make_shared<std::atomic<int>>(0);
};

}  // namespace clusterd
