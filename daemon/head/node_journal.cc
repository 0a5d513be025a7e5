#include "daemon/head/node_journal.h"

#include <algorithm>

#include "common/logging.h"
#include "daemon/head/journal.h"

namespace clusterd {

namespace {

JournalEntry EntryOf(const NodeRecord& record, int64_t unix_ms) {
  JournalEntry entry;
  entry.set_unix_ms(unix_ms);
  *entry.mutable_node() = record;
  return entry;
}

}  // namespace

NodeJournal::NodeJournal(const Clock* clock, JobStore* store, RecordsFn records)
    : clock_(clock), store_(store), records_(std::move(records)) {}

Result<std::vector<NodeRecord>> NodeJournal::Load() {
  ASSIGN_OR_RETURN(std::vector<JournalEntry> entries, store_->LoadAll());
  std::vector<NodeRecord> latest;
  std::map<std::string, size_t> index_of;  // node id -> its place in latest
  for (JournalEntry& entry : entries) {
    if (!entry.has_node() || entry.node().info().node_id().empty()) continue;
    const std::string id = entry.node().info().node_id();
    live_total_ -= live_bytes_[id];
    live_bytes_[id] = entry.ByteSizeLong() + kRecordHeaderBytes;
    live_total_ += live_bytes_[id];
    auto [it, inserted] = index_of.try_emplace(id, latest.size());
    if (inserted) latest.emplace_back();
    latest[it->second] = std::move(*entry.mutable_node());
  }
  return latest;
}

void NodeJournal::Record(const NodeRecord& record) {
  const JournalEntry entry = EntryOf(record, clock_->UnixMillis());
  Status written = store_->Append(entry);
  if (!written.ok()) {
    LOG_WARN("node {}: the nodes' journal: {}", record.info().name(), written.message());
    return;
  }
  uint64_t& bytes = live_bytes_[record.info().node_id()];
  live_total_ -= bytes;
  bytes = entry.ByteSizeLong() + kRecordHeaderBytes;
  live_total_ += bytes;
  if (store_->bytes() > std::max<uint64_t>(1 << 20, 4 * live_total_)) Rewrite();
}

void NodeJournal::Rewrite() {
  const int64_t now = clock_->UnixMillis();
  std::vector<NodeRecord> records = records_();
  Status compacted = store_->CompactFrom([&](const JobStore::EntrySink& emit) -> Status {
    for (const NodeRecord& record : records) RETURN_IF_ERROR(emit(EntryOf(record, now)));
    return Status::Ok();
  });
  if (!compacted.ok()) LOG_WARN("the nodes' journal: rewriting it failed: {}", compacted.message());
}

}  // namespace clusterd
