#include "daemon/head/identity/user_journal.h"

#include "common/logging.h"

namespace clusterd {

Result<UserJournal::Contents> UserJournal::Load() {
  ASSIGN_OR_RETURN(std::vector<JournalEntry> entries, store_->LoadAll());
  Contents contents;
  for (JournalEntry& entry : entries) {
    if (entry.has_user() && !entry.user().info().name().empty()) {
      contents.users[entry.user().info().name()] = std::move(*entry.mutable_user());
    } else if (entry.has_node_token() && !entry.node_token().info().id().empty()) {
      contents.node_tokens[entry.node_token().info().id()] = std::move(*entry.mutable_node_token());
    }
  }
  const size_t live = contents.users.size() + contents.node_tokens.size();
  if (entries.size() >= 64 && entries.size() > 2 * live) {
    const int64_t now = clock_->UnixMillis();
    Status compacted = store_->CompactFrom([&](const JobStore::EntrySink& emit) -> Status {
      JournalEntry entry;
      entry.set_unix_ms(now);
      for (const auto& [name, record] : contents.users) {
        *entry.mutable_user() = record;
        RETURN_IF_ERROR(emit(entry));
      }
      for (const auto& [id, record] : contents.node_tokens) {
        *entry.mutable_node_token() = record;
        RETURN_IF_ERROR(emit(entry));
      }
      return Status::Ok();
    });
    // The old file still reads back whole: a failed rewrite costs space only.
    if (!compacted.ok()) LOG_WARN("the users' journal: rewriting it failed: {}", compacted.message());
  }
  return contents;
}

Status UserJournal::Record(const UserRecord& record) {
  JournalEntry entry;
  entry.set_unix_ms(clock_->UnixMillis());
  *entry.mutable_user() = record;
  return AppendDurably(entry);
}

Status UserJournal::Record(const NodeTokenRecord& record) {
  JournalEntry entry;
  entry.set_unix_ms(clock_->UnixMillis());
  *entry.mutable_node_token() = record;
  return AppendDurably(entry);
}

Status UserJournal::AppendDurably(const JournalEntry& entry) {
  Status appended = store_->Append(entry);
  if (appended.ok()) appended = store_->SyncTask()();
  if (!appended.ok()) {
    return Status::Unavailable("the users' journal cannot be written (" + appended.message() +
                               "): nothing was changed");
  }
  return Status::Ok();
}

}  // namespace clusterd
