#include "daemon/store/blob_store.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>

#include <fmt/format.h>

#include "common/file_util.h"
#include "common/logging.h"
#include "daemon/store/blob_room.h"

namespace clusterd {

BlobStore::BlobStore(Options options)
    : options_(std::move(options)),
      clock_(options_.clock ? options_.clock : &system_clock_),
      files_(options_.dir),
      damage_(mutex_, index_, files_,
              {[this](const std::string& id, const char* why) { EvictLocked(id, why); },
               [this](const std::string& owner, const std::string& why) {
                 ReleaseLocked(owner);
                 if (on_released_) on_released_(owner, why);
               }}) {}

int64_t BlobStore::NowNanos() const { return clock_->UnixMillis() * 1'000'000; }

Result<std::unique_ptr<BlobStore>> BlobStore::Open(const Options& options) {
  auto store = std::unique_ptr<BlobStore>(new BlobStore(options));
  RETURN_IF_ERROR(store->files_.Prepare());
  ASSIGN_OR_RETURN(std::vector<BlobFiles::Found> found, store->files_.Scan());
  for (const BlobFiles::Found& blob : found) store->index_.Add(blob.id, blob.size, blob.modified_nanos);
  LOG_INFO("store {}: {} blobs, {} of {}", options.dir, store->index_.blobs().size(), Mib(store->index_.used_bytes()),
           options.capacity_bytes > 0 ? Mib(options.capacity_bytes) : "no cap");
  return store;
}

bool BlobStore::Has(const std::string& id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return index_.Has(id);
}

Result<int64_t> BlobStore::Size(const std::string& id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const BlobIndex::Blob* blob = index_.Find(id);
  if (!blob) return Status::NotFound(fmt::format("no blob {} in the head's store", id));
  return blob->size;
}

bool BlobStore::IsPinned(const std::string& id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return index_.IsHeld(id);
}

std::vector<std::string> BlobStore::Holders(const std::string& id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return index_.Holders(id);
}

void BlobStore::TouchLocked(const std::string& id, BlobIndex::Blob& blob) {
  blob.last_used = NowNanos();
  files_.SetLastUse(id, blob.last_used);
}

void BlobStore::EvictLocked(const std::string& id, const char* why) {
  const BlobIndex::Blob* blob = index_.Find(id);
  if (!blob) return;
  if (Status removed = files_.Remove(id); !removed.ok()) {
    LOG_WARN("store: cannot delete {}: {}", id, removed.message());
    return;
  }
  LOG_DEBUG("store: deleted {} ({}), {}", id, Mib(blob->size), why);
  index_.Remove(id);
}

void BlobStore::ReleaseLocked(const std::string& owner) {
  for (const std::string& id : index_.DropOwner(owner)) {
    if (!index_.IsHeld(id)) EvictLocked(id, "its owner let go");
  }
}

Status BlobStore::MakeRoom(int64_t bytes) {
  const Evictor evictor{[this](const std::string& id, const char* why) { EvictLocked(id, why); },
                        [this](const std::string& owner) {
                          ReleaseLocked(owner);
                          if (on_released_) on_released_(owner, "");
                        }};
  const int64_t fresh_since = NowNanos() - options_.upload_grace_s * 1'000'000'000;
  return clusterd::MakeRoom(index_, reserved_, options_.capacity_bytes, bytes, fresh_since, evictor);
}

Result<std::unique_ptr<BlobStore::Writer>> BlobStore::Create(const std::string& id, int64_t size) {
  if (!IsBlobId(id)) return Status::InvalidArgument(fmt::format("'{}' is not a blob id (64 hex digits)", id));
  if (size < 0) return Status::InvalidArgument(fmt::format("blob {}: negative size {}", id, size));
  return StartWrite(id, size, size);
}

Result<std::unique_ptr<BlobStore::Writer>> BlobStore::CreateUnnamed(int64_t size_hint) {
  if (size_hint < 0) return Status::InvalidArgument(fmt::format("an upload's expected size {} is negative", size_hint));
  return StartWrite("", -1, size_hint);
}

Result<std::unique_ptr<BlobStore::Writer>> BlobStore::StartWrite(const std::string& id, int64_t size,
                                                                int64_t announced) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!id.empty() && index_.Has(id)) {
      return Status::AlreadyExists(fmt::format("the head's store already has blob {}", id));
    }
    RETURN_IF_ERROR(CheckAnnounced(index_, reserved_, options_.capacity_bytes, announced,
                                   id.empty() ? "an upload" : "blob " + id));
  }
  const std::string temp = files_.NewTempPath(id);
  int fd = open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return Status::IOError(fmt::format("cannot create {}: {}", temp, std::strerror(errno)));
  return std::unique_ptr<Writer>(new Writer(this, id, size, temp, fd));
}

Status BlobStore::Grow(Writer* writer, int64_t end) {
  std::lock_guard<std::mutex> lock(mutex_);
  const int64_t cap = options_.capacity_bytes;
  const int64_t need = end - writer->reserved_;
  int64_t ahead = 0;
  if (cap > 0 && index_.used_bytes() + reserved_ + need > cap) {
    ahead = RoomAhead(writer->written_, writer->size_, end, cap - index_.HardPinnedBytes() - reserved_ - need);
  }
  RETURN_IF_ERROR(MakeRoom(need + ahead).WithContext(fmt::format("an upload past {}", Mib(writer->written_))));
  reserved_ += need + ahead;
  writer->reserved_ += need + ahead;
  return Status::Ok();
}

Status BlobStore::Finish(Writer* writer) {
  Status result = writer->Seal();
  if (result.ok()) result = files_.MoveIntoPlace(writer->temp_path_, writer->id_);
  if (!result.ok()) unlink(writer->temp_path_.c_str());
  std::lock_guard<std::mutex> lock(mutex_);
  reserved_ -= writer->reserved_;
  if (result.ok() && !index_.Has(writer->id_)) {  // a twin upload may have won
    const int64_t now = NowNanos();
    index_.Add(writer->id_, writer->size_, now);
    files_.SetLastUse(writer->id_, now);
  }
  return result;
}

void BlobStore::Abandon(Writer* writer) {
  close(writer->fd_);
  unlink(writer->temp_path_.c_str());
  std::lock_guard<std::mutex> lock(mutex_);
  reserved_ -= writer->reserved_;
}

Result<int> BlobStore::OpenForRead(const std::string& id) {
  if (!IsBlobId(id)) return Status::InvalidArgument(fmt::format("'{}' is not a blob id (64 hex digits)", id));
  std::lock_guard<std::mutex> lock(mutex_);
  BlobIndex::Blob* blob = index_.Find(id);
  if (!blob) return Status::NotFound(fmt::format("no blob {} in the head's store", id));
  int fd = open(files_.PathOf(id).c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0 && errno == ENOENT) {
    // A blob whose file went (deleted by hand, a disk repaired) would stay
    // the one every retry fails to restore, and its bytes never be taken again.
    damage_.DropLocked(id, BlobDamage::kFileGone);
    return Status::NotFound(fmt::format("no blob {} in the head's store (its file was gone, and is dropped)", id));
  }
  if (fd < 0) return Status::IOError(fmt::format("cannot open blob {}: {}", id, std::strerror(errno)));
  TouchLocked(id, *blob);
  return fd;
}

void BlobStore::Pin(const std::string& owner, const std::string& id) { Pin(owner, std::vector<std::string>{id}); }

void BlobStore::Pin(const std::string& owner, const std::vector<std::string>& ids) {
  std::lock_guard<std::mutex> lock(mutex_);
  const int64_t now = NowNanos();
  index_.Pin(owner, ids, now);
  for (const std::string& id : ids) {
    if (index_.Has(id)) files_.SetLastUse(id, now);
  }
}

void BlobStore::MakeSoft(const std::string& owner) {
  std::lock_guard<std::mutex> lock(mutex_);
  index_.MakeSoft(owner, NowNanos());
}

void BlobStore::UnpinAll(const std::string& owner) {
  std::lock_guard<std::mutex> lock(mutex_);
  index_.DropOwner(owner);
}

void BlobStore::Release(const std::string& owner) {
  std::lock_guard<std::mutex> lock(mutex_);
  ReleaseLocked(owner);
}

void BlobStore::MarkUnwanted(const std::vector<std::string>& ids) {
  std::lock_guard<std::mutex> lock(mutex_);
  index_.MarkUnwanted(ids);
}

BlobStore::Usage BlobStore::usage() const {
  std::lock_guard<std::mutex> lock(mutex_);
  Usage usage;
  usage.used_bytes = index_.used_bytes();
  usage.capacity_bytes = options_.capacity_bytes;
  usage.blobs = static_cast<int64_t>(index_.blobs().size());
  usage.pinned_bytes = index_.HardPinnedBytes();
  usage.reserved_bytes = reserved_;
  return usage;
}

std::vector<std::string> BlobStore::Missing(const std::vector<std::string>& ids) {
  std::set<std::string> present;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const std::string& id : ids) {
      BlobIndex::Blob* blob = index_.Find(id);
      if (!blob) continue;
      TouchLocked(id, *blob);
      present.insert(id);
    }
  }
  // Outside the lock: a stat per piece the store has (an unchanged file's).
  damage_.DropGone(present);
  std::vector<std::string> missing;
  for (const std::string& id : ids) {
    if (!present.count(id)) missing.push_back(id);
  }
  return missing;
}

Result<bool> BlobStore::DropIfCorrupt(const std::string& id) {
  if (!Has(id)) return false;
  auto fd = OpenForRead(id);
  if (!fd.ok()) return fd.status().code() == Status::Code::kNotFound ? Result<bool>(true) : fd.status();
  return damage_.DropIfCorrupt(id, UniqueFd{*fd});
}

void BlobStore::DropUnreadable(const std::string& id, const std::string& error) {
  damage_.DropUnreadable(id, error);
}

}  // namespace clusterd
