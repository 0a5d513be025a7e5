#include "common/logs/log_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>

#include <fmt/format.h>

#include "common/logs/attempt_banner.h"
#include "common/clock.h"
#include "common/file_util.h"
#include "common/logging.h"
#include "common/text.h"

namespace clusterd {
namespace {

bool EndsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// Bytes an unprivileged writer may still use on the folder's disk; -1 when
// it cannot be told (the folder is not there yet: its parent's disk then).
int64_t StatvfsFree(const std::string& folder) {
  struct statvfs fs {};
  for (std::string at = folder; !at.empty(); at = at.substr(0, at.rfind('/'))) {
    if (statvfs(at.c_str(), &fs) == 0) return static_cast<int64_t>(fs.f_bavail) * static_cast<int64_t>(fs.f_frsize);
    if (errno != ENOENT || at.find('/') == std::string::npos) break;
  }
  return -1;
}

}  // namespace

LogStore::LogStore(std::string root, int64_t packed_limit, int64_t limit_bytes, int64_t min_free_bytes)
    : root_(std::move(root)),
      packed_limit_(packed_limit),
      limit_bytes_(std::max<int64_t>(limit_bytes, 0)),
      min_free_bytes_(std::max<int64_t>(min_free_bytes, 0)),
      free_probe_(StatvfsFree),
      packs_(root_.empty() ? "" : root_ + "/packs") {
  if (root_.empty()) return;
  // One listing up front, so that the log-shipping path asks the
  // filesystem nothing to learn where a log lives.
  if (DIR* dir = opendir(root_.c_str())) {
    while (dirent* entry = readdir(dir)) {
      const std::string name = entry->d_name;
      if (name == "." || name == ".." || name == "packs") continue;
      if (name.find(".log.tmp") != std::string::npos) {
        unlink((root_ + "/" + name).c_str());  // a move to a file of its own that a dead daemon left half done
      } else if (EndsWith(name, ".log")) {
        const std::string key = name.substr(0, name.size() - 4);
        own_files_.insert(key);
        struct stat st {};
        const int64_t bytes = fstatat(dirfd(dir), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 ? st.st_size : 0;
        file_bytes_ += bytes;
        job_bytes_[JobOfKey(key)] += bytes;
      } else if (entry->d_type == DT_DIR || entry->d_type == DT_UNKNOWN) {
        old_folders_.insert(name);
        const int64_t bytes = FolderBytes(root_ + "/" + name);
        old_folder_bytes_[name] = bytes;
        file_bytes_ += bytes;
        job_bytes_[name] += bytes;
      }
    }
    closedir(dir);
  }
  if (Status loaded = packs_.Load(); !loaded.ok()) LOG_WARN("job logs: {}", loaded.message());
  // A log moved to its own file after its last record was packed: the file
  // has all of it.
  for (const std::string& key : packs_.Keys()) {
    if (own_files_.count(key)) {
      packs_.Forget(key);
    } else {
      job_bytes_[JobOfKey(key)] += packs_.Size(key);
    }
  }
}

std::string LogStore::JobOfKey(const std::string& key) {
  const size_t rank_at = key.rfind(".rank-");
  return rank_at == std::string::npos ? key : key.substr(0, rank_at);
}

int64_t LogStore::FolderBytes(const std::string& folder) {
  int64_t bytes = 0;
  if (DIR* dir = opendir(folder.c_str())) {
    while (dirent* entry = readdir(dir)) {
      struct stat st {};
      if (fstatat(dirfd(dir), entry->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode)) {
        bytes += st.st_size;
      }
    }
    closedir(dir);
  }
  return bytes;
}

void LogStore::SetFreeSpaceProbe(std::function<int64_t(const std::string& folder)> probe) {
  free_probe_ = std::move(probe);
  free_seen_ = -1;
}

int64_t LogStore::FreeBytes() {
  if (free_seen_ < 0 || written_since_free_ >= kFreeRecheckBytes) {
    free_seen_ = free_probe_(root_);
    written_since_free_ = 0;
    // A disk that cannot be asked is taken as roomy: the limit in bytes still holds.
    if (free_seen_ < 0) return std::numeric_limits<int64_t>::max();
  }
  return free_seen_ - written_since_free_;
}

bool LogStore::WantsRoom() {
  if (root_.empty()) return false;
  return (limit_bytes_ > 0 && static_cast<double>(DiskBytes()) > kRoomHigh * static_cast<double>(limit_bytes_)) ||
         (min_free_bytes_ > 0 && FreeBytes() < 2 * min_free_bytes_);
}

bool LogStore::HasRoom() {
  return (limit_bytes_ <= 0 || static_cast<double>(DiskBytes()) <= kRoomLow * static_cast<double>(limit_bytes_)) &&
         (min_free_bytes_ <= 0 || FreeBytes() >= 2 * min_free_bytes_);
}

int64_t LogStore::JobBytes(const std::string& job_id) const {
  auto it = job_bytes_.find(job_id);
  return it == job_bytes_.end() ? 0 : it->second;
}

std::string LogStore::KeyOf(const std::string& job_id, int rank) { return fmt::format("{}.rank-{}", job_id, rank); }

std::string LogStore::FileOf(const std::string& job_id, int rank) const {
  if (old_folders_.count(job_id)) return fmt::format("{}/{}/rank-{}.log", root_, job_id, rank);
  std::string key = KeyOf(job_id, rank);
  return own_files_.count(key) ? fmt::format("{}/{}.log", root_, key) : "";
}

Status LogStore::MoveToFile(const std::string& job_id, int rank, const std::string& data) {
  const std::string key = KeyOf(job_id, rank);
  ASSIGN_OR_RETURN(std::string content, packs_.Read(key, 0, packs_.Size(key)));
  content += data;
  RETURN_IF_ERROR(MakeDirs(root_, 0700));
  // Whole or not at all: a daemon killed here still has the packed copy.
  RETURN_IF_ERROR(WriteFileAtomic(fmt::format("{}/{}.log", root_, key), content, 0600, Durability::kWhileRunning));
  packs_.Forget(key);
  own_files_.insert(key);
  file_bytes_ += static_cast<int64_t>(content.size());
  return Status::Ok();
}

Status LogStore::Keep(const std::string& job_id, int rank, const std::string& data) {
  const std::string file = FileOf(job_id, rank);
  const std::string key = KeyOf(job_id, rank);
  const bool packed = file.empty() && packs_.Size(key) + static_cast<int64_t>(data.size()) <= packed_limit_;
  if (limit_bytes_ > 0) {
    // A move to a file of its own writes the packed bytes again; a packed
    // record has a header and the key.
    const int64_t needed = static_cast<int64_t>(data.size()) +
                           (packed ? static_cast<int64_t>(12 + key.size()) : file.empty() ? packs_.Size(key) : 0);
    if (DiskBytes() + needed > limit_bytes_) {
      return Status::ResourceExhausted(
          fmt::format("the head's log store is at its limit of {} (log_store_limit_mb)",
                      HumanBytes(static_cast<uint64_t>(limit_bytes_))));
    }
  }
  if (min_free_bytes_ > 0) {
    const int64_t needed = static_cast<int64_t>(data.size()) + (file.empty() && !packed ? packs_.Size(key) : 0);
    if (const int64_t free = FreeBytes(); free - needed < min_free_bytes_) {
      return Status::ResourceExhausted(fmt::format(
          "the disk of the head's log store has {} free, and the store leaves at least {} (log_store_min_free_mb)",
          HumanBytes(static_cast<uint64_t>(std::max<int64_t>(free, 0))),
          HumanBytes(static_cast<uint64_t>(min_free_bytes_))));
    }
  }
  if (file.empty()) return packed ? packs_.Append(key, data) : MoveToFile(job_id, rank, data);
  UniqueFd out{open(file.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW)};
  struct stat before {};
  if (!out.ok() || fstat(out.get(), &before) != 0) {
    return Status::IOError(fmt::format("cannot open {}: {}", file, std::strerror(errno)));
  }
  Status written = WriteAllAt(out.get(), data, -1, file);
  // All or nothing, so that the marker that follows says exactly what is missing.
  if (!written.ok() && ftruncate(out.get(), before.st_size) != 0) {
    LOG_WARN("cannot cut {} back to {} bytes: {}", file, before.st_size, std::strerror(errno));
  }
  if (written.ok()) file_bytes_ += static_cast<int64_t>(data.size());
  return written;
}

void LogStore::Append(const std::string& job_id, int rank, const std::string& data) {
  if (root_.empty() || data.empty()) return;
  const std::string key = KeyOf(job_id, rank);
  auto lost = lost_.find(key);
  // A full disk cuts logs short: what could not be kept is marked where it
  // is missing, once the next output is kept, so that the reader knows.
  const std::string text = lost == lost_.end() ? data
                                               : fmt::format("[clusterd: {} bytes of this log were lost here: {}]\n",
                                                             lost->second.bytes, lost->second.why) +
                                                     data;
  Status kept = Keep(job_id, rank, text);
  if (kept.ok()) {
    job_bytes_[job_id] += static_cast<int64_t>(text.size());
    written_since_free_ += static_cast<int64_t>(text.size());
    if (lost != lost_.end()) lost_.erase(lost);
    if (observer_) observer_->OnKept(job_id, rank, text);
    return;
  }
  Loss& loss = lost_[key];
  loss.bytes += static_cast<int64_t>(data.size());
  loss.why = kept.message();
  int64_t held_back = 0;
  if (loss_warnings_.Allow(SystemClock().NowMicros(), &held_back)) {
    LOG_WARN("job {} rank {}: {} bytes of its log were not kept: {}{}", job_id, rank, data.size(), kept.message(),
             held_back > 0 ? fmt::format(" ({} such warnings held back)", held_back) : "");
  }
}

Result<std::string> LogStore::Read(const std::string& job_id, int rank, int64_t offset, int64_t max_bytes,
                                   int64_t* end) const {
  *end = offset;
  if (offset < 0) {
    return Status::InvalidArgument(fmt::format("offset {} into the log of {} rank {} is negative", offset, job_id, rank));
  }
  const int64_t size = Size(job_id, rank);
  if (offset > size && offsets_may_run_ahead_) {
    *end = size;
    return fmt::format("[clusterd: this log goes on from byte {}, not {}: the head now leading read it back from S3 "
                       "without the last output its predecessor received (docs/HA.md, rank logs)]\n",
                       size, offset);
  }
  if (offset > size) {
    return Status::InvalidArgument(fmt::format("offset {} is past the end of the log of {} rank {} ({} bytes)", offset,
                                               job_id, rank, size));
  }
  // 0 <= offset <= size here, so size - offset cannot overflow.
  const int64_t n = std::min(std::max<int64_t>(max_bytes, 0), size - offset);
  if (n == 0) return std::string();
  const std::string file = FileOf(job_id, rank);
  std::string data;
  if (file.empty()) {
    ASSIGN_OR_RETURN(data, packs_.Read(KeyOf(job_id, rank), offset, n));
  } else {
    std::ifstream in(file, std::ios::binary);
    data.resize(static_cast<size_t>(n));
    in.seekg(offset);
    in.read(data.data(), n);
    data.resize(static_cast<size_t>(std::max<std::streamsize>(in.gcount(), 0)));
  }
  *end = offset + static_cast<int64_t>(data.size());
  return data;
}

int64_t LogStore::Size(const std::string& job_id, int rank) const {
  if (root_.empty()) return 0;
  const std::string file = FileOf(job_id, rank);
  if (file.empty()) return packs_.Size(KeyOf(job_id, rank));
  struct stat st {};
  return stat(file.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_size) : 0;
}

std::string LogStore::Tail(const std::string& job_id, int rank, int lines) const {
  int64_t end = 0;
  // The tail of a failed rank is for a one-screen reason: 16 KiB is plenty.
  auto data = Read(job_id, rank, std::max<int64_t>(0, Size(job_id, rank) - 16384), 16384, &end);
  return data.ok() ? LastLines(*data, lines) : "";
}

int LogStore::LastAttempt(const std::string& job_id, int rank) const {
  // Backwards a chunk at a time: the banner is near the end unless the
  // attempt printed a lot, and a log may be far larger than memory allows.
  // Chunks overlap by more than a banner's length, so none is cut in two.
  constexpr int64_t kChunk = 1 << 16, kOverlap = 1024;
  const int64_t size = Size(job_id, rank);
  for (int64_t end = size; end > 0;) {
    const int64_t begin = std::max<int64_t>(0, end - kChunk);
    int64_t read_to = 0;
    auto data = Read(job_id, rank, begin, std::min(size, end + kOverlap) - begin, &read_to);
    if (!data.ok()) return -1;
    std::string text = std::move(*data);
    // Mid-file, the first line may be the tail of a longer one: it is read
    // whole with the chunk before.
    if (begin > 0) text.erase(0, std::min(text.size(), text.find('\n') + 1));
    int attempt = LastAttemptBanner(text);
    if (attempt >= 0) return attempt;
    end = begin;
  }
  return -1;
}

void LogStore::Delete(const std::string& job_id, int ranks) {
  if (root_.empty()) return;
  if (observer_) observer_->OnDeleted(job_id);
  job_bytes_.erase(job_id);
  free_seen_ = -1;  // what the deletion freed shows at the next look
  for (int rank = 0; rank < ranks; ++rank) {
    const std::string key = KeyOf(job_id, rank);
    packs_.Forget(key);
    lost_.erase(key);
    const std::string file = fmt::format("{}/{}.log", root_, key);
    if (!own_files_.erase(key)) continue;
    struct stat st {};
    if (stat(file.c_str(), &st) == 0) file_bytes_ -= static_cast<int64_t>(st.st_size);
    if (unlink(file.c_str()) != 0) {
      LOG_WARN("job {}: cannot delete its log {}: {}", job_id, file, std::strerror(errno));
    }
  }
  if (auto bytes = old_folder_bytes_.find(job_id); bytes != old_folder_bytes_.end()) {
    file_bytes_ -= bytes->second;
    old_folder_bytes_.erase(bytes);
  }
  if (old_folders_.erase(job_id)) {
    if (Status removed = RemoveTree(root_ + "/" + job_id); !removed.ok()) {
      LOG_WARN("job {}: its logs: {}", job_id, removed.message());
    }
  }
}

void LogStore::ForgetJobsExcept(const std::function<bool(const std::string& job_id)>& known) {
  packs_.OwnLoadedPacks();
  for (const std::string& key : packs_.Keys()) {
    const size_t rank_at = key.rfind(".rank-");
    if (rank_at == std::string::npos || known(key.substr(0, rank_at))) continue;
    auto job = job_bytes_.find(key.substr(0, rank_at));
    if (job != job_bytes_.end() && (job->second -= packs_.Size(key)) <= 0) job_bytes_.erase(job);
    packs_.Forget(key);
  }
}

void LogStore::Release(const std::string& job_id, int rank) {
  const std::string key = KeyOf(job_id, rank);
  const int64_t size = Size(job_id, rank);
  if (auto job = job_bytes_.find(job_id); job != job_bytes_.end() && (job->second -= size) <= 0) job_bytes_.erase(job);
  packs_.Forget(key);
  lost_.erase(key);
  // Kept, such files would fill a node's disk: a long-lived agent runs millions of ranks.
  if (own_files_.erase(key)) {
    file_bytes_ -= size;
    unlink(fmt::format("{}/{}.log", root_, key).c_str());
  }
}

}  // namespace clusterd
