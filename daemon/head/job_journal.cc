#include "daemon/head/job_journal.h"

#include <malloc.h>

#include <algorithm>

#include <fmt/format.h>

#include "common/job_state.h"
#include "common/logging.h"
#include "daemon/head/job_delta.h"

namespace clusterd {

JobJournal::JobJournal(const Clock* clock, const Config& config, JobStore* store, SnapshotFn snapshot)
    : clock_(clock), config_(config), store_(store), snapshot_(std::move(snapshot)) {
  syncing_.defer = [](std::function<void()> fn) { fn(); };
  syncing_.offload = [](std::function<Status()> sync, std::function<void(Status)> done) { done(sync()); };
}

void JobJournal::WhenDurable(std::function<void(Status)> done) {
  if (durable_ >= written_) {
    done(Status::Ok());
    return;
  }
  waiters_.emplace_back(written_, std::move(done));
  ScheduleSync();
}

void JobJournal::ScheduleSync() {
  if (sync_deferred_ || sync_running_) return;  // that sync, or the one after it, covers this
  sync_deferred_ = true;
  syncing_.defer([this] { StartSync(); });
}

void JobJournal::StartSync() {
  sync_deferred_ = false;
  if (sync_running_ || durable_ >= written_) return;
  sync_running_ = true;
  const uint64_t target = written_;
  syncing_.offload(store_->SyncTask(), [this, target](Status status) { OnSynced(target, status); });
}

void JobJournal::OnSynced(uint64_t target, const Status& status) {
  sync_running_ = false;
  if (status.ok()) {
    durable_ = std::max(durable_, target);
    ReleaseWaiters(durable_, Status::Ok());
    if (durable_ < written_) ScheduleSync();
    return;
  }
  // What was written since the last good sync may be gone from the disk:
  // nothing more is appended until a snapshot of memory replaces the file.
  Failed(status);
  ReleaseWaiters(written_, Status::Unavailable(Refusal().message() + "; this change may not survive a restart "
                                                                     "of the head"));
  durable_ = written_;
}

void JobJournal::ReleaseWaiters(uint64_t upto, const Status& status) {
  while (!waiters_.empty() && waiters_.front().first <= upto) {
    auto done = std::move(waiters_.front().second);
    waiters_.pop_front();
    done(status);
  }
}

Status JobJournal::Refusal() const {
  return Status::Unavailable("the head's journal cannot be written: " + reason_);
}

void JobJournal::Failed(const Status& status) {
  if (failing_since_ == 0) {
    failing_since_ = clock_->UnixMillis();
    LOG_ERROR("journal: a write failed, so the head refuses calls that must be durable (submit, stop, delete) "
              "until a snapshot can be written: {}", status.message());
  }
  reason_ = status.message();
  retry_at_ = clock_->NowMicros() + std::max(1, config_.journal_retry_ms) * Micros{1000};
}

Status JobJournal::Append(const JournalEntry& entry) {
  if (!ok()) return Refusal();
  Status st = store_->Append(entry);
  if (!st.ok()) {
    Failed(st);
    return st;
  }
  ++written_;
  ScheduleSync();
  return st;
}

Status JobJournal::WriteSnapshot(const std::string& why) {
  // The delta bases are taken as the entries go by. Should the compaction
  // fail, they are ahead of the journal, which then refuses every write
  // until a snapshot succeeds and takes them again.
  journaled_.clear();
  size_t entries = 0;
  Status st = store_->CompactFrom([&](const JobStore::EntrySink& emit) {
    return snapshot_([&](const JournalEntry& entry) {
      RETURN_IF_ERROR(emit(entry));
      ++entries;
      if (entry.has_job()) Remember(entry.job());
      return Status::Ok();
    });
  });
  if (!st.ok()) {
    Failed(st);
    return st;
  }
  snapshot_bytes_ = static_cast<int64_t>(store_->bytes());
  state_bytes_ = static_cast<uint64_t>(snapshot_bytes_);
  ++snapshots_;
  // A snapshot is synced when it is in place, and holds everything.
  durable_ = written_;
  ReleaseWaiters(durable_, Status::Ok());
  last_snapshot_unix_ms_ = clock_->UnixMillis();
  if (!ok()) {
    LOG_INFO("journal: writable again after {} ms; wrote a snapshot of {} entries ({} bytes)",
             last_snapshot_unix_ms_ - failing_since_, entries, snapshot_bytes_);
  } else {
    LOG_INFO("journal: {}: wrote a snapshot of {} entries ({} bytes)", why, entries, snapshot_bytes_);
  }
  failing_since_ = 0;
  reason_.clear();
  return Status::Ok();
}

uint64_t JobJournal::CompactAt() const {
  const uint64_t floor = static_cast<uint64_t>(std::max<int64_t>(config_.journal_compact_mb, 1)) << 20;
  const uint64_t ratio = static_cast<uint64_t>(std::max(config_.journal_compact_ratio, 2));
  return std::max(floor, ratio * state_bytes_);
}

void JobJournal::MaybeCompact() {
  if (!ok() || store_->bytes() <= CompactAt()) return;
  const uint64_t before = store_->bytes();
  // A failure leaves the old journal (the rewrite is atomic), but the
  // store may have lost its writer: it counts as failing until a snapshot works.
  WriteSnapshot(fmt::format("compacted {} bytes", before));
  // The snapshot held a copy of every job for a moment: its pages go back
  // to the system rather than stay as the head's high-water mark.
  malloc_trim(0);
}

Status JobJournal::Writable() {
  if (ok()) return Status::Ok();
  Retry();
  return ok() ? Status::Ok() : Refusal();
}

void JobJournal::Retry() {
  std::function<Status()> probe = store_->ProbeTask();
  if (!probe) {
    WriteSnapshot("recovered");
    return;
  }
  if (probe_running_) return;  // its outcome retries
  probe_running_ = true;
  // Tick's next call is a period away, not at once while the probe runs.
  retry_at_ = clock_->NowMicros() + std::max(1, config_.journal_retry_ms) * Micros{1000};
  syncing_.offload(std::move(probe), [this](Status status) {
    probe_running_ = false;
    if (ok()) return;
    if (!status.ok()) {
      Failed(status);
      return;
    }
    WriteSnapshot("recovered");
  });
}

void JobJournal::Remember(const JobInfo& info) {
  if (IsTerminal(info.state())) {
    journaled_.erase(info.job_id());
  } else {
    journaled_[info.job_id()] = WithoutSpec(info);
  }
}

Status JobJournal::AddJob(const JobInfo& info) {
  JournalEntry entry;
  entry.set_unix_ms(clock_->UnixMillis());
  entry.set_job_id(info.job_id());
  *entry.mutable_job() = info;
  if (!Append(entry).ok()) return Refusal();
  Remember(info);
  return Status::Ok();
}

void JobJournal::JobChanged(JobInfo* info) {
  if (!ok()) {
    // The snapshot, whenever it succeeds, holds this change too.
    if (clock_->NowMicros() >= retry_at_) Retry();
    return;
  }
  JournalEntry entry;
  entry.set_unix_ms(clock_->UnixMillis());
  entry.set_job_id(info->job_id());
  auto before = journaled_.find(info->job_id());
  if (before == journaled_.end()) {
    // No base to build on (a finished job's late change): the whole record.
    *entry.mutable_job() = *info;
    if (!Append(entry).ok()) return;
    Remember(*info);
  } else {
    SpecAside aside(info);  // so that neither the delta nor the base copies it
    if (!MakeDelta(before->second, *info, entry.mutable_delta())) return;  // nothing the journal lacks
    if (!Append(entry).ok()) return;
    Remember(*info);
  }
  MaybeCompact();
}

void JobJournal::RankEnded(const std::string& job_id, const RankEnd& end) {
  if (!ok()) return;  // the recovering snapshot holds the rank's exit
  JournalEntry entry;
  entry.set_unix_ms(clock_->UnixMillis());
  entry.set_job_id(job_id);
  *entry.mutable_rank_end() = end;
  if (Append(entry).ok()) MaybeCompact();
}

void JobJournal::AddMetric(const std::string& job_id, const MetricRecord& record) {
  if (!ok()) return;  // kept in memory: the recovering snapshot holds it
  JournalEntry entry;
  entry.set_unix_ms(clock_->UnixMillis());
  entry.set_job_id(job_id);
  *entry.mutable_metric() = record;
  if (Append(entry).ok()) MaybeCompact();
}

Status JobJournal::DeleteJob(const std::string& job_id, const std::string& why) {
  RETURN_IF_ERROR(Writable());
  JournalEntry entry;
  entry.set_unix_ms(clock_->UnixMillis());
  entry.set_job_id(job_id);
  entry.set_deleted(why);
  if (!Append(entry).ok()) return Refusal();
  journaled_.erase(job_id);
  return Status::Ok();
}

void JobJournal::Restored(const std::vector<const JobInfo*>& jobs) {
  journaled_.clear();
  // About what a snapshot of this state takes (the records; metrics left
  // out, so it errs towards compacting): the journal is rewritten when it
  // is journal_compact_ratio times that, as after any snapshot. A journal
  // of an older head (the whole record at every transition) can be far
  // larger than its state and starts from a snapshot; one that is a fresh
  // snapshot already is not written again at every start.
  state_bytes_ = 0;
  for (const JobInfo* info : jobs) {
    Remember(*info);
    state_bytes_ += info->ByteSizeLong();
  }
  MaybeCompact();
}

Micros JobJournal::Tick() {
  if (ok()) return 0;
  if (clock_->NowMicros() >= retry_at_) Retry();
  return ok() ? 0 : retry_at_;
}

JournalStatus JobJournal::Health() const {
  JournalStatus health;
  health.set_ok(ok());
  health.set_failing_since_unix_ms(failing_since_);
  health.set_reason(reason_);
  health.set_bytes(static_cast<int64_t>(store_->bytes()));
  health.set_snapshot_bytes(snapshot_bytes_);
  health.set_snapshots(snapshots_);
  health.set_last_snapshot_unix_ms(last_snapshot_unix_ms_);
  return health;
}

}  // namespace clusterd
