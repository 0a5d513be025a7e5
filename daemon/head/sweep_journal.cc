#include "daemon/head/sweep_journal.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "common/logging.h"
#include "daemon/head/journal.h"

namespace clusterd {

SweepJournal::SweepJournal(const Clock* clock, JobStore* store, RecordsFn records)
    : clock_(clock), store_(store), records_(std::move(records)) {
  if (!store_) {
    memory_store_ = std::make_unique<MemoryJobStore>();
    store_ = memory_store_.get();
  }
}

Status SweepJournal::AppendDurably(const JournalEntry& entry) {
  // JobStore::Append only writes (the job journal syncs in groups); sweep
  // records are few (a trial's start and end), so each is synced at once.
  RETURN_IF_ERROR(store_->Append(entry));
  return store_->SyncTask()();
}

Status SweepJournal::RecordSubmit(const SweepInfo& info) {
  JournalEntry entry;
  entry.set_unix_ms(clock_->UnixMillis());
  *entry.mutable_sweep() = info;
  return AppendDurably(entry);
}

void SweepJournal::RecordSweep(const SweepInfo& info) {
  JournalEntry entry;
  *entry.mutable_sweep() = info;
  Record(info.sweep_id(), std::move(entry));
}

void SweepJournal::RecordTrials(const SweepInfo& info, const std::vector<int>& indexes) {
  JournalEntry entry;
  SweepTrials* trials = entry.mutable_sweep_trials();
  trials->set_sweep_id(info.sweep_id());
  trials->set_best_trial(info.best_trial());
  for (int index : indexes) *trials->add_trials() = info.trials(index);
  Record(info.sweep_id(), std::move(entry));
}

void SweepJournal::Record(const std::string& sweep_id, JournalEntry entry) {
  entry.set_unix_ms(clock_->UnixMillis());
  Status status = AppendDurably(entry);
  if (!status.ok()) LOG_WARN("sweep {}: journal write failed: {}", sweep_id, status.message());
  uint64_t live = 0;
  for (const SweepInfo* info : records_().sweeps) live += info->ByteSizeLong() + kJournalHeaderBytes;
  if (store_->bytes() > std::max<uint64_t>(1 << 20, 4 * live)) {
    Status compacted = Rewrite("");
    if (!compacted.ok()) LOG_WARN("sweeps' journal: compaction failed: {}", compacted.message());
  }
}

Status SweepJournal::Rewrite(const std::string& without) {
  const Records records = records_();
  std::vector<JournalEntry> entries;
  // Ids are never handed out twice, though the newest sweeps be deleted:
  // the number goes first.
  JournalEntry first;
  first.set_unix_ms(clock_->UnixMillis());
  first.mutable_snapshot()->set_next_sweep_number(records.next_sweep_number);
  entries.push_back(std::move(first));
  for (const SweepInfo* info : records.sweeps) {
    if (info->sweep_id() == without) continue;
    JournalEntry e;
    e.set_unix_ms(clock_->UnixMillis());
    *e.mutable_sweep() = *info;
    entries.push_back(std::move(e));
  }
  return store_->Compact(entries);
}

Result<SweepJournal::Loaded> SweepJournal::Load() {
  ASSIGN_OR_RETURN(std::vector<JournalEntry> entries, store_->LoadAll());
  Loaded loaded;
  std::map<std::string, size_t> index_of;  // sweep id -> its place in loaded.sweeps
  for (const auto& e : entries) {
    if (e.has_sweep_trials()) {
      auto it = index_of.find(e.sweep_trials().sweep_id());
      if (it == index_of.end()) continue;  // a change to a sweep the journal does not hold: nothing to apply it to
      SweepInfo& info = loaded.sweeps[it->second];
      for (const TrialInfo& trial : e.sweep_trials().trials()) {
        if (trial.index() >= 0 && trial.index() < info.trials_size()) *info.mutable_trials(trial.index()) = trial;
      }
      info.set_best_trial(e.sweep_trials().best_trial());
      continue;
    }
    if (e.has_snapshot()) loaded.next_sweep_number = std::max(loaded.next_sweep_number, e.snapshot().next_sweep_number());
    if (!e.has_sweep()) continue;
    const std::string& id = e.sweep().sweep_id();
    auto [it, inserted] = index_of.try_emplace(id, loaded.sweeps.size());
    if (inserted) loaded.sweeps.emplace_back();
    loaded.sweeps[it->second] = e.sweep();
    int number = 0;
    if (std::sscanf(id.c_str(), "sweep-%d", &number) == 1) {
      loaded.next_sweep_number = std::max(loaded.next_sweep_number, number + 1);
    }
  }
  return loaded;
}

}  // namespace clusterd
