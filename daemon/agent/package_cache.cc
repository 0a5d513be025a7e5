#include "daemon/agent/package_cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "common/file_util.h"
#include "common/logging.h"
#include "common/storage/tar_package.h"
#include "daemon/agent/tree_link.h"

namespace clusterd {

namespace {

// An flock held for as long as this object lives.
class FileLock {
 public:
  FileLock(const std::string& path, int operation) {
    fd_ = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd_ < 0) return;
    while (flock(fd_, operation) != 0) {
      if (errno == EINTR) continue;
      close(fd_);
      fd_ = -1;
      return;
    }
  }
  ~FileLock() {
    if (fd_ >= 0) close(fd_);
  }
  bool held() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

// Tells a download that failed its own check (size, hash: worth fetching
// again) from other failures.
class CheckedSource final : public ByteSource {
 public:
  explicit CheckedSource(std::unique_ptr<ByteSource> inner) : inner_(std::move(inner)) {}
  Status Next(std::string_view* piece) override { return Note(inner_->Next(piece)); }
  Status Finish() override { return Note(inner_->Finish()); }
  bool bad() const { return bad_; }

 private:
  Status Note(Status status) {
    bad_ = bad_ || status.code() == Status::Code::kCorruption;
    return status;
  }
  std::unique_ptr<ByteSource> inner_;
  bool bad_ = false;
};

int64_t TreeBytes(const std::vector<TreeEntry>& entries) {
  int64_t bytes = 0;
  for (const TreeEntry& e : entries) bytes += static_cast<int64_t>(e.size);
  return bytes;
}

}  // namespace

PackageCache::PackageCache(Options options, OpenFn open) : options_(std::move(options)), open_(std::move(open)) {}

PackageCache::PackageCache(Options options, FetchFn fetch) : options_(std::move(options)), fetch_(std::move(fetch)) {}

Status PackageCache::Checkout(const std::string& id, int64_t size, const std::string& work_dir,
                              const std::vector<std::string>& outputs) {
  struct stat st {};
  if (lstat(work_dir.c_str(), &st) == 0) return Status::Ok();
  RETURN_IF_ERROR(MakeDirs(options_.dir, 0700));
  RETURN_IF_ERROR(MakeDirs(work_dir.substr(0, work_dir.rfind('/')), 0700));
  FileLock lock(LockFile(id), LOCK_EX);
  if (!lock.held()) {
    return Status::IOError(fmt::format("cannot lock {}: {}", LockFile(id), std::strerror(errno)));
  }
  RETURN_IF_ERROR(EnsureUnpacked(id, size));
  ASSIGN_OR_RETURN(std::vector<TreeEntry> entries, LoadTreeIndex(IndexFile(id)));
  RETURN_IF_ERROR(LinkTree(TreeDir(id), entries, work_dir, outputs));
  // Last use, for eviction. The precise clock, not UTIME_NOW: the kernel
  // stamps that from its coarse clock (a tick, 4-10 ms), so two uses a few
  // milliseconds apart could tie and the newer be evicted first.
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  const timespec times[2] = {now, now};
  utimensat(AT_FDCWD, IndexFile(id).c_str(), times, 0);
  return Status::Ok();
}

Status PackageCache::EnsureUnpacked(const std::string& id, int64_t size) {
  auto index = LoadTreeIndex(IndexFile(id));
  if (index.ok()) {
    std::string changed = FirstChangedEntry(TreeDir(id), *index);
    if (changed.empty()) return Status::Ok();
    LOG_WARN("package {}: {} was changed in place by a job; unpacking the package again", id, changed);
  }
  unlink(IndexFile(id).c_str());
  RETURN_IF_ERROR(RemoveTree(TreeDir(id)));
  EvictFor(size, id);
  Status fetched = FetchAndUnpack(id, size);
  if (!fetched.ok()) {
    // A tree half unpacked (a full disk, a bad transfer) has no index, which
    // eviction counts by: kept, it would hold its space unseen and fail
    // every other package's unpack until removed by hand.
    Status removed = RemoveTree(TreeDir(id));
    if (!removed.ok()) LOG_WARN("package {}: cannot remove what was unpacked: {}", id, removed.message());
  }
  return fetched;
}

Status PackageCache::FetchAndUnpack(const std::string& id, int64_t size) {
  bool bad_transfer = false;
  Status unpacked = UnpackOnce(id, size, &bad_transfer);
  if (bad_transfer) {
    // A transfer can go bad; fetch once more before blaming the head's copy.
    // (The head has checked its copy meanwhile and dropped it if it is bad:
    // then the second fetch finds none, and the first's error says why.)
    LOG_WARN("package {}: {}; fetching it again", id, unpacked.message());
    const Status first = unpacked;
    bad_transfer = false;
    unpacked = UnpackOnce(id, size, &bad_transfer);
    if (bad_transfer) {
      return Status::Corruption(fmt::format("package {} failed its hash check twice: {}", id, unpacked.message()));
    }
    if (unpacked.code() == Status::Code::kNotFound) {
      return Status::Corruption(fmt::format("package {} failed its hash check: {}", id, first.message()));
    }
  }
  RETURN_IF_ERROR(unpacked);
  ASSIGN_OR_RETURN(std::vector<TreeEntry> entries, IndexTree(TreeDir(id)));
  RETURN_IF_ERROR(SaveTreeIndex(IndexFile(id), entries));
  LOG_INFO("package {}: fetched and unpacked, {} entries, {} bytes", id, entries.size(), TreeBytes(entries));
  return Status::Ok();
}

Status PackageCache::UnpackOnce(const std::string& id, int64_t size, bool* bad_transfer) {
  if (open_) {
    CheckedSource source(open_(id, size));
    Status unpacked = ExtractPackage(&source, "package " + id, TreeDir(id));
    *bad_transfer = source.bad();
    return unpacked;
  }
  static std::atomic<unsigned> counter{0};
  std::string archive = fmt::format("{}/{}.tar.{}-{}", options_.dir, id, getpid(), counter++);
  Status fetched = fetch_(id, archive);
  *bad_transfer = fetched.code() == Status::Code::kCorruption;
  Status unpacked = fetched.ok() ? ExtractPackage(archive, TreeDir(id)) : fetched.WithContext("fetching package " + id);
  unlink(archive.c_str());
  return *bad_transfer ? fetched : unpacked;
}

void PackageCache::EvictFor(int64_t bytes, const std::string& keep) {
  if (options_.capacity_bytes <= 0) return;
  struct Held {
    int64_t last_used;
    std::string id;
    int64_t bytes;
  };
  std::vector<Held> held;
  int64_t used = 0;
  DIR* dir = opendir(options_.dir.c_str());
  if (!dir) return;
  std::vector<std::string> unindexed;  // trees a crashed agent left half unpacked
  while (dirent* entry = readdir(dir)) {
    std::string name = entry->d_name;
    const std::string suffix = ".index";
    if (name.size() == 64 && name.find_first_not_of("0123456789abcdef") == std::string::npos &&
        access(IndexFile(name).c_str(), F_OK) != 0) {
      unindexed.push_back(name);
    }
    if (name.size() <= suffix.size() || name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) continue;
    std::string id = name.substr(0, name.size() - suffix.size());
    struct stat st {};
    auto index = LoadTreeIndex(IndexFile(id));
    if (!index.ok() || stat(IndexFile(id).c_str(), &st) != 0) continue;
    int64_t tree = TreeBytes(*index);
    used += tree;
    if (id != keep) held.push_back({static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec, id, tree});
  }
  closedir(dir);
  for (const std::string& id : unindexed) {
    FileLock lock(LockFile(id), LOCK_EX | LOCK_NB);
    if (id == keep || !lock.held()) continue;  // being unpacked right now
    if (RemoveTree(TreeDir(id)).ok()) LOG_INFO("package cache: removed {}, left half unpacked", id);
  }
  std::sort(held.begin(), held.end(), [](const Held& a, const Held& b) { return a.last_used < b.last_used; });
  for (const Held& candidate : held) {
    if (used + bytes <= options_.capacity_bytes) break;
    FileLock lock(LockFile(candidate.id), LOCK_EX | LOCK_NB);
    if (!lock.held()) continue;  // being checked out right now
    unlink(IndexFile(candidate.id).c_str());
    if (RemoveTree(TreeDir(candidate.id)).ok()) {
      used -= candidate.bytes;
      LOG_INFO("package cache: evicted {} ({} bytes), least recently used", candidate.id, candidate.bytes);
    }
  }
  if (used + bytes > options_.capacity_bytes) {
    LOG_WARN("package cache {} holds {} bytes in packages in use; going over its cap of {} for {}", options_.dir, used,
             options_.capacity_bytes, keep);
  }
}

int64_t PackageCache::UsedBytes() const {
  int64_t used = 0;
  DIR* dir = opendir(options_.dir.c_str());
  if (!dir) return 0;
  while (dirent* entry = readdir(dir)) {
    std::string name = entry->d_name;
    if (name.size() > 6 && name.compare(name.size() - 6, 6, ".index") == 0) {
      auto index = LoadTreeIndex(options_.dir + "/" + name);
      if (index.ok()) used += TreeBytes(*index);
    }
  }
  closedir(dir);
  return used;
}

}  // namespace clusterd
