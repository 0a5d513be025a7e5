#include "daemon/head/job_store.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace clusterd {

FileJobStore::FileJobStore(std::string path, std::unique_ptr<JournalWriter> writer)
    : path_(std::move(path)), writer_(std::move(writer)) {}

Result<std::unique_ptr<FileJobStore>> FileJobStore::Open(const std::string& path) {
  ASSIGN_OR_RETURN(std::unique_ptr<JournalWriter> writer, JournalWriter::Open(path));
  return std::unique_ptr<FileJobStore>(new FileJobStore(path, std::move(writer)));
}

Status FileJobStore::Append(const JournalEntry& entry) {
  if (writer_ == nullptr) return Status::IOError("journal " + path_ + " is not open (failed compaction)");
  std::string payload;
  if (!entry.SerializeToString(&payload)) return Status::Internal("cannot serialize journal entry");
  return writer_->Write(payload);
}

std::function<Status()> FileJobStore::SyncTask() {
  const int fd = writer_ == nullptr ? -1 : ::dup(writer_->fd());
  if (fd < 0) {
    std::string why = writer_ == nullptr ? "it is not open (failed compaction)" : std::strerror(errno);
    return [why, path = path_] { return Status::IOError("cannot sync journal " + path + ": " + why); };
  }
  return [fd, path = path_] {
    const int failed = ::fdatasync(fd) != 0 ? errno : 0;
    ::close(fd);
    if (failed == 0) return Status::Ok();
    return Status::IOError("fdatasync " + path + ": " + std::strerror(failed));
  };
}

Result<std::vector<JournalEntry>> FileJobStore::LoadAll() {
  ASSIGN_OR_RETURN(ReplayResult read, ReadJournal(path_));
  std::vector<JournalEntry> entries(read.records.size());
  for (size_t i = 0; i < read.records.size(); ++i) {
    if (!entries[i].ParseFromString(read.records[i])) {
      return Status::Corruption(path_ + ": record " + std::to_string(i) + " is not a JournalEntry");
    }
  }
  return entries;
}

Status JobStore::Compact(const std::vector<JournalEntry>& entries) {
  return CompactFrom([&](const EntrySink& emit) {
    for (const JournalEntry& entry : entries) RETURN_IF_ERROR(emit(entry));
    return Status::Ok();
  });
}

Status FileJobStore::CompactFrom(const EntrySource& source) {
  // The writer's descriptor would keep pointing at the replaced inode.
  writer_.reset();
  auto rewrite = JournalRewrite::Begin(path_);
  Status rewritten = rewrite.status();
  if (rewritten.ok()) {
    std::string payload;  // one buffer for every entry
    rewritten = source([&](const JournalEntry& entry) {
      payload.clear();
      if (!entry.SerializeToString(&payload)) return Status::Internal("cannot serialize journal entry");
      return (*rewrite)->Add(payload);
    });
    if (rewritten.ok()) rewritten = (*rewrite)->Commit();
  }
  auto reopened = JournalWriter::Open(path_);
  if (!reopened.ok()) return reopened.status().WithContext("reopen after compaction");
  writer_ = std::move(reopened.value());
  return rewritten;
}

Status MemoryJobStore::Append(const JournalEntry& entry) {
  if (fail_appends_) return Status::IOError("memory job store: append failure injected");
  entries_.push_back(entry);
  bytes_ += kRecordHeaderBytes + entry.ByteSizeLong();
  return Status::Ok();
}

std::function<Status()> MemoryJobStore::SyncTask() {
  return [fail = fail_syncs_, syncs = syncs_] {
    if (fail) return Status::IOError("memory job store: sync failure injected");
    ++*syncs;
    return Status::Ok();
  };
}

Status MemoryJobStore::CompactFrom(const EntrySource& source) {
  if (fail_appends_) return Status::IOError("memory job store: compaction failure injected");
  std::vector<JournalEntry> entries;
  RETURN_IF_ERROR(source([&](const JournalEntry& entry) {
    entries.push_back(entry);
    return Status::Ok();
  }));
  entries_ = std::move(entries);
  bytes_ = kJournalHeaderBytes;
  for (const auto& entry : entries_) bytes_ += kRecordHeaderBytes + entry.ByteSizeLong();
  return Status::Ok();
}

Result<std::vector<JournalEntry>> MemoryJobStore::LoadAll() {
  if (fail_loads_) return Status::IOError("memory job store: load failure injected");
  return entries_;
}

}  // namespace clusterd
