#include "daemon/store/blob_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <set>
#include <vector>

#include <fmt/format.h>

#include "common/file_util.h"
#include "common/logging.h"

namespace clusterd {

namespace {

// A file's modification time stands for its blob's last use across a
// restart of the head.
void SetMtime(const std::string& path, int64_t nanos) {
  const struct timespec times[2] = {{0, UTIME_OMIT}, {nanos / 1'000'000'000, nanos % 1'000'000'000}};
  utimensat(AT_FDCWD, path.c_str(), times, 0);
}

std::string Mib(int64_t bytes) { return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1 << 20)); }

Status WriteAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::IOError(std::strerror(errno));
    data += n;
    size -= static_cast<size_t>(n);
  }
  return Status::Ok();
}

}  // namespace

int64_t BlobStore::NowNanos() const {
  if (options_.clock) return options_.clock->UnixMillis() * 1'000'000;
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool IsBlobId(const std::string& id) {
  return id.size() == 64 &&
         std::all_of(id.begin(), id.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

std::string BlobStore::PathOf(const std::string& id) const {
  return fmt::format("{}/blobs/{}/{}", options_.dir, id.substr(0, 2), id);
}

Result<std::unique_ptr<BlobStore>> BlobStore::Open(const Options& options) {
  auto store = std::unique_ptr<BlobStore>(new BlobStore(options));
  RETURN_IF_ERROR(MakeDirs(options.dir + "/blobs", 0700));
  // Temporaries are writes that a previous head never finished.
  RETURN_IF_ERROR(RemoveTree(options.dir + "/tmp"));
  RETURN_IF_ERROR(MakeDirs(options.dir + "/tmp", 0700));
  DIR* top = opendir((options.dir + "/blobs").c_str());
  if (!top) return Status::IOError(fmt::format("cannot read {}/blobs: {}", options.dir, std::strerror(errno)));
  while (dirent* fan = readdir(top)) {
    std::string prefix = fan->d_name;
    if (prefix.size() != 2) continue;
    DIR* sub = opendir((options.dir + "/blobs/" + prefix).c_str());
    if (!sub) continue;
    while (dirent* file = readdir(sub)) {
      std::string id = file->d_name;
      struct stat st {};
      if (!IsBlobId(id) || id.compare(0, 2, prefix) != 0 || lstat(store->PathOf(id).c_str(), &st) != 0 ||
          !S_ISREG(st.st_mode)) {
        continue;
      }
      Entry& entry = store->blobs_[id];
      entry.size = st.st_size;
      entry.last_used = static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
      store->used_ += st.st_size;
    }
    closedir(sub);
  }
  closedir(top);
  LOG_INFO("store {}: {} blobs, {} of {}", options.dir, store->blobs_.size(), Mib(store->used_),
           options.capacity_bytes > 0 ? Mib(options.capacity_bytes) : "no cap");
  return store;
}

bool BlobStore::Has(const std::string& id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return blobs_.count(id) > 0;
}

Result<int64_t> BlobStore::Size(const std::string& id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = blobs_.find(id);
  if (it == blobs_.end()) return Status::NotFound(fmt::format("no blob {} in the head's store", id));
  return it->second.size;
}

bool BlobStore::PinnedLocked(const std::string& id) const {
  for (const auto& [owner, held] : owners_) {
    if (held.ids.count(id)) return true;
  }
  return false;
}

bool BlobStore::IsPinned(const std::string& id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return PinnedLocked(id);
}

void BlobStore::Touch(const std::string& id, Entry& entry) {
  entry.last_used = NowNanos();
  SetMtime(PathOf(id), entry.last_used);
}

void BlobStore::EvictLocked(const std::string& id, const char* why) {
  auto it = blobs_.find(id);
  if (it == blobs_.end()) return;
  if (unlink(PathOf(id).c_str()) != 0 && errno != ENOENT) {
    LOG_WARN("store: cannot delete {}: {}", id, std::strerror(errno));
    return;
  }
  used_ -= it->second.size;
  LOG_DEBUG("store: deleted {} ({}), {}", id, Mib(it->second.size), why);
  blobs_.erase(it);
}

void BlobStore::ReleaseLocked(const std::string& owner) {
  auto it = owners_.find(owner);
  if (it == owners_.end()) return;
  std::set<std::string> ids = std::move(it->second.ids);
  owners_.erase(it);
  for (const std::string& id : ids) {
    if (!PinnedLocked(id)) EvictLocked(id, "its owner let go");
  }
}

int64_t BlobStore::HardPinnedBytesLocked() const {
  std::set<std::string> held;
  for (const auto& [owner, pins] : owners_) {
    if (!pins.soft) held.insert(pins.ids.begin(), pins.ids.end());
  }
  int64_t bytes = 0;
  for (const std::string& id : held) {
    auto it = blobs_.find(id);
    if (it != blobs_.end()) bytes += it->second.size;
  }
  return bytes;
}

Status BlobStore::CheckAnnounced(int64_t bytes, const std::string& what) {
  const int64_t cap = options_.capacity_bytes;
  if (cap <= 0) return Status::Ok();
  if (bytes > cap) {
    return Status::ResourceExhausted(
        fmt::format("{} of {} is more than the head's whole store may hold ({})", what, Mib(bytes), Mib(cap)));
  }
  if (used_ + reserved_ + bytes <= cap) return Status::Ok();  // fits without a scan
  // Only live jobs' blobs are certain to stay; the rest could make room
  // once the bytes arrive, so nothing is evicted or reserved for a promise.
  const int64_t pinned = HardPinnedBytesLocked();
  if (pinned + bytes <= cap) return Status::Ok();
  return Status::ResourceExhausted(
      fmt::format("the head's store cannot take {} of {}: {} of its {} cap are held by live jobs", what, Mib(bytes),
                  Mib(pinned), Mib(cap)));
}

Status BlobStore::MakeRoom(int64_t bytes) {
  const int64_t cap = options_.capacity_bytes;
  if (cap <= 0) return Status::Ok();
  auto fits = [&] { return used_ + reserved_ + bytes <= cap; };
  if (fits()) return Status::Ok();
  // Evicting everything that may go would not do: evict nothing (a write
  // that fails must not have emptied the store on its way).
  const int64_t pinned = HardPinnedBytesLocked();
  if (pinned + reserved_ + bytes > cap) {
    return Status::ResourceExhausted(fmt::format(
        "the head's store is full: no room for {} more, as {} of its {} cap are held by live jobs and {} by uploads "
        "under way",
        Mib(bytes), Mib(pinned), Mib(cap), Mib(reserved_)));
  }
  std::set<std::string> held;  // by any owner, hard or soft
  for (const auto& [owner, pins] : owners_) held.insert(pins.ids.begin(), pins.ids.end());
  // The blobs nobody holds, least recently used first: those unused for a
  // while first, then (below) finished jobs' data, and only then the fresh
  // ones. A tree's pieces are held by nobody until its manifest is stored
  // and pinned: an upload into a full store must not evict its own first
  // pieces before an older finished job's outputs.
  std::vector<std::pair<int64_t, std::string>> loose;  // (last used, id)
  for (const auto& [id, entry] : blobs_) {
    if (!held.count(id)) loose.push_back({entry.last_used, id});
  }
  std::sort(loose.begin(), loose.end());
  const int64_t fresh_since = NowNanos() - kUploadGraceNanos;
  auto stale_end = std::find_if(loose.begin(), loose.end(), [&](const auto& blob) { return blob.first >= fresh_since; });
  for (auto it = loose.begin(); it != stale_end; ++it) {
    if (fits()) return Status::Ok();
    EvictLocked(it->second, "least recently used");
  }
  // Then finished jobs' data, the owner used longest ago first.
  std::vector<std::pair<int64_t, std::string>> soft;
  for (const auto& [owner, pins] : owners_) {
    if (pins.soft) soft.push_back({pins.last_used, owner});
  }
  std::sort(soft.begin(), soft.end());
  for (const auto& [used_at, owner] : soft) {
    if (fits()) return Status::Ok();
    ReleaseLocked(owner);
    if (on_released_) on_released_(owner, "");
  }
  for (auto it = stale_end; it != loose.end(); ++it) {
    if (fits()) return Status::Ok();
    if (!blobs_.count(it->second)) continue;  // a released owner's, gone with it
    EvictLocked(it->second, "least recently used, though fresh");
  }
  if (fits()) return Status::Ok();
  // Only a file that would not be deleted (EvictLocked warned) gets here.
  return Status::ResourceExhausted(fmt::format(
      "the head's store cannot make room for {}: {} of its {} cap are held by live jobs or uploads under way",
      Mib(bytes), Mib(used_ + reserved_), Mib(cap)));
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
  std::string tmp;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!id.empty() && blobs_.count(id)) {
      return Status::AlreadyExists(fmt::format("the head's store already has blob {}", id));
    }
    RETURN_IF_ERROR(CheckAnnounced(announced, id.empty() ? "an upload" : "blob " + id));
    tmp = fmt::format("{}/tmp/{}.{}", options_.dir, id.empty() ? "upload" : id, next_tmp_++);
  }
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return Status::IOError(fmt::format("cannot create {}: {}", tmp, std::strerror(errno)));
  return std::unique_ptr<Writer>(new Writer(this, id, size, tmp, fd));
}

Status BlobStore::Grow(Writer* writer, int64_t end) {
  std::lock_guard<std::mutex> lock(mutex_);
  const int64_t need = end - writer->reserved_;
  int64_t ahead = 0;
  if (options_.capacity_bytes > 0 && used_ + reserved_ + need > options_.capacity_bytes) {
    // Evicting scans the store: room for more than this chunk, bounded by
    // what the write already proved and by what it announced.
    ahead = std::min(writer->written_ / 4, kRoomAheadBytes);
    if (writer->size_ >= 0) ahead = std::min(ahead, writer->size_ - end);
    const int64_t spare = options_.capacity_bytes - HardPinnedBytesLocked() - reserved_ - need;
    ahead = std::max<int64_t>(0, std::min(ahead, spare));
  }
  RETURN_IF_ERROR(MakeRoom(need + ahead).WithContext(fmt::format("an upload past {}", Mib(writer->written_))));
  reserved_ += need + ahead;
  writer->reserved_ += need + ahead;
  return Status::Ok();
}

BlobStore::Writer::Writer(BlobStore* store, std::string id, int64_t size, std::string tmp_path, int fd)
    : store_(store), id_(std::move(id)), size_(size), tmp_path_(std::move(tmp_path)), fd_(fd) {}

BlobStore::Writer::~Writer() {
  if (!done_) store_->Abandon(this);
}

Status BlobStore::Writer::Append(const std::string& data) {
  if (done_) return Status::FailedPrecondition("write after the blob was finished");
  const int64_t end = written_ + static_cast<int64_t>(data.size());
  if (size_ >= 0 && end > size_) {
    return Status::InvalidArgument(fmt::format("blob {}: more than the {} bytes announced", id_, size_));
  }
  if (end > reserved_) RETURN_IF_ERROR(store_->Grow(this, end));
  RETURN_IF_ERROR(WriteAll(fd_, data.data(), data.size()).WithContext("writing " + tmp_path_));
  hash_.Update(data.data(), data.size());
  written_ = end;
  return Status::Ok();
}

Status BlobStore::Writer::Commit() {
  if (done_) return Status::FailedPrecondition("blob already finished");
  if (size_ < 0) return Status::FailedPrecondition("an upload named at its end needs its id to finish");
  done_ = true;
  return store_->Finish(this);
}

Status BlobStore::Writer::Commit(const std::string& id, int64_t size) {
  if (done_) return Status::FailedPrecondition("blob already finished");
  if (size_ >= 0) return Status::FailedPrecondition(fmt::format("blob {} was named at its start", id_));
  done_ = true;
  Status named = !IsBlobId(id) ? Status::InvalidArgument(fmt::format("'{}' is not a blob id (64 hex digits)", id))
                 : size < 0    ? Status::InvalidArgument(fmt::format("blob {}: negative size {}", id, size))
                               : Status::Ok();
  if (!named.ok()) {
    store_->Abandon(this);
    return named;
  }
  id_ = id;
  size_ = size;
  return store_->Finish(this);
}

Status BlobStore::Finish(Writer* writer) {
  Status result = Status::Ok();
  if (writer->written_ != writer->size_) {
    result = Status::InvalidArgument(fmt::format("blob {}: {} bytes arrived of the {} announced", writer->id_,
                                                 writer->written_, writer->size_));
  } else if (std::string got = writer->hash_.HexDigest(); got != writer->id_) {
    result = Status::Corruption(fmt::format("blob {}: the bytes that arrived hash to {}", writer->id_, got));
  } else if (fsync(writer->fd_) != 0) {
    result = Status::IOError(fmt::format("cannot sync {}: {}", writer->tmp_path_, std::strerror(errno)));
  }
  close(writer->fd_);
  std::string path = PathOf(writer->id_);
  if (result.ok()) result = MakeDirs(path.substr(0, path.rfind('/')), 0700);
  bool moved = result.ok() && rename(writer->tmp_path_.c_str(), path.c_str()) == 0;
  if (result.ok() && !moved && (errno == EISDIR || errno == ENOTEMPTY || errno == EEXIST)) {
    // Not a blob's file stands there (a directory): it is no blob, so it goes.
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
    moved = rename(writer->tmp_path_.c_str(), path.c_str()) == 0;
  }
  if (result.ok() && !moved) {
    result = Status::IOError(fmt::format("cannot move {} into place: {}", writer->tmp_path_, std::strerror(errno)));
  }
  if (!result.ok()) unlink(writer->tmp_path_.c_str());
  std::lock_guard<std::mutex> lock(mutex_);
  reserved_ -= writer->reserved_;
  if (result.ok() && !blobs_.count(writer->id_)) {  // a twin upload may have won
    blobs_[writer->id_] = Entry{writer->size_, NowNanos()};
    SetMtime(path, blobs_[writer->id_].last_used);
    used_ += writer->size_;
  }
  return result;
}

void BlobStore::Abandon(Writer* writer) {
  close(writer->fd_);
  unlink(writer->tmp_path_.c_str());
  std::lock_guard<std::mutex> lock(mutex_);
  reserved_ -= writer->reserved_;
}

Result<int> BlobStore::OpenForRead(const std::string& id) {
  if (!IsBlobId(id)) return Status::InvalidArgument(fmt::format("'{}' is not a blob id (64 hex digits)", id));
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = blobs_.find(id);
  if (it == blobs_.end()) return Status::NotFound(fmt::format("no blob {} in the head's store", id));
  int fd = open(PathOf(id).c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0 && errno == ENOENT) {
    // Found by exploratory testing: a blob whose file went (deleted by hand,
    // a disk repaired) stayed listed, so a checkpoint made of it stayed the
    // one every retry failed to restore, and its bytes were never taken again.
    DropDamagedLocked(id, kFileGone);
    return Status::NotFound(fmt::format("no blob {} in the head's store (its file was gone, and is dropped)", id));
  }
  if (fd < 0) return Status::IOError(fmt::format("cannot open blob {}: {}", id, std::strerror(errno)));
  Touch(id, it->second);
  return fd;
}

void BlobStore::Pin(const std::string& owner, const std::string& id) { Pin(owner, std::vector<std::string>{id}); }

void BlobStore::Pin(const std::string& owner, const std::vector<std::string>& ids) {
  std::lock_guard<std::mutex> lock(mutex_);
  Owner& held = owners_[owner];
  held.last_used = NowNanos();
  for (const std::string& id : ids) {
    held.ids.insert(id);
    auto it = blobs_.find(id);
    if (it != blobs_.end()) Touch(id, it->second);
  }
}

void BlobStore::MakeSoft(const std::string& owner) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = owners_.find(owner);
  if (it == owners_.end()) return;
  it->second.soft = true;
  it->second.last_used = NowNanos();
}

void BlobStore::UnpinAll(const std::string& owner) {
  std::lock_guard<std::mutex> lock(mutex_);
  owners_.erase(owner);
}

void BlobStore::Release(const std::string& owner) {
  std::lock_guard<std::mutex> lock(mutex_);
  ReleaseLocked(owner);
}

void BlobStore::MarkUnwanted(const std::vector<std::string>& ids) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const std::string& id : ids) {
    auto it = blobs_.find(id);
    if (it != blobs_.end() && !PinnedLocked(id)) it->second.last_used = 0;
  }
}

BlobStore::Usage BlobStore::usage() const {
  std::lock_guard<std::mutex> lock(mutex_);
  Usage usage;
  usage.used_bytes = used_;
  usage.capacity_bytes = options_.capacity_bytes;
  usage.blobs = static_cast<int64_t>(blobs_.size());
  usage.pinned_bytes = HardPinnedBytesLocked();
  usage.reserved_bytes = reserved_;
  return usage;
}

}  // namespace clusterd
