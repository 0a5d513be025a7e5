#include "daemon/head/queue_policy/quota_book.h"

#include <cctype>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "common/logging.h"
#include "journal.pb.h"

namespace clusterd {

namespace {

JournalEntry EntryOf(const QuotaRecord& record, int64_t unix_ms) {
  JournalEntry entry;
  entry.set_unix_ms(unix_ms);
  *entry.mutable_quota() = record;
  return entry;
}

Status CheckQuotaName(const std::string& name) {
  constexpr size_t kMaxBytes = 64;
  bool ok = !name.empty() && name.size() <= kMaxBytes && name[0] != '-';
  for (char c : name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.')) ok = false;
  }
  if (ok) return Status::Ok();
  return Status::InvalidArgument(fmt::format(
      "quota: '{}' is not a user's or a group's name (letters, digits, '_', '-', '.'; at most {} bytes)", name,
      kMaxBytes));
}

}  // namespace

Status QuotaBook::Load() {
  if (!store_) return Status::Ok();
  ASSIGN_OR_RETURN(std::vector<JournalEntry> entries, store_->LoadAll());
  std::map<std::string, QuotaRecord> latest;
  for (JournalEntry& entry : entries) {
    if (!entry.has_quota()) continue;
    ++records_;
    latest[entry.quota().name()] = std::move(*entry.mutable_quota());
  }
  for (const auto& [name, record] : latest) {
    if (!record.removed()) quotas_->Set(name, record.limit());
  }
  return Status::Ok();
}

Result<QuotaInfo> QuotaBook::Apply(const SetQuotaRequest& request) {
  RETURN_IF_ERROR(CheckQuotaName(request.name()));
  if (!request.remove() && request.limit().amounts().empty()) {
    return Status::InvalidArgument("quota: give at least one limit, as GPU=8 or CPU=64 (or remove the quota)");
  }
  for (const auto& [resource, amount] : request.limit().amounts()) {
    if (resource.empty() || !std::isfinite(amount) || amount < 0) {
      return Status::InvalidArgument(
          fmt::format("quota {}: {}={} is not a resource and an amount >= 0", request.name(), resource, amount));
    }
  }
  if (request.remove() && !quotas_->LimitOf(request.name())) {
    return Status::NotFound(fmt::format("quota: {} has no quota", request.name()));
  }
  QuotaRecord record;
  record.set_name(request.name());
  *record.mutable_limit() = request.limit();
  record.set_removed(request.remove());
  if (store_) {
    Status written = store_->Append(EntryOf(record, clock_->UnixMillis()));
    if (!written.ok()) return Status::Unavailable("the quotas' journal: " + written.message() + "; nothing changed");
    ++records_;
  }
  if (request.remove()) {
    quotas_->Remove(request.name());
  } else {
    quotas_->Set(request.name(), request.limit());
  }
  LOG_INFO("quota {}: {}", request.name(), request.remove() ? "removed" : request.limit().ShortDebugString());
  CompactIfLarge();
  QuotaInfo info;
  info.set_name(request.name());
  for (const QuotaInfo& listed : quotas_->List()) {
    if (listed.name() == request.name()) info = listed;
  }
  return info;
}

ListQuotasReply QuotaBook::List() const {
  ListQuotasReply reply;
  for (QuotaInfo& info : quotas_->List()) *reply.add_quotas() = std::move(info);
  return reply;
}

void QuotaBook::CompactIfLarge() {
  const std::vector<QuotaInfo> current = quotas_->List();
  if (records_ < 1000 || static_cast<size_t>(records_) < 4 * current.size()) return;
  const int64_t now = clock_->UnixMillis();
  Status compacted = store_->CompactFrom([&](const JobStore::EntrySink& emit) -> Status {
    for (const QuotaInfo& info : current) {
      QuotaRecord record;
      record.set_name(info.name());
      *record.mutable_limit() = info.limit();
      RETURN_IF_ERROR(emit(EntryOf(record, now)));
    }
    return Status::Ok();
  });
  if (compacted.ok()) {
    records_ = static_cast<int>(current.size());
  } else {
    LOG_WARN("the quotas' journal: rewriting it failed: {}", compacted.message());
  }
}

}  // namespace clusterd
