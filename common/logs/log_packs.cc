#include "common/logs/log_packs.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "common/file_util.h"

namespace clusterd {
namespace {

constexpr char kMagic[4] = {'C', 'L', 'P', 'K'};
constexpr size_t kHeaderBytes = 12;
// Larger fields mean a damaged record, not a log: keys are "<job>.rank-<n>",
// and LogStore moves a log to a file of its own long before this.
constexpr uint32_t kMaxKeyBytes = 4096;
constexpr uint32_t kMaxDataBytes = 64u << 20;
// Packs read from at once; more are closed and opened again as needed.
constexpr size_t kReadFdsKept = 16;

std::string Header(uint32_t key_bytes, uint32_t data_bytes) {
  std::string header(kMagic, sizeof kMagic);
  header.append(reinterpret_cast<const char*>(&key_bytes), sizeof key_bytes);
  header.append(reinterpret_cast<const char*>(&data_bytes), sizeof data_bytes);
  return header;
}

// "000042.pack" -> 42; anything else (temporaries, other files) -> false.
bool PackNumber(const char* name, uint32_t* number) {
  const char* dot = std::strchr(name, '.');
  if (!dot || dot == name || std::strcmp(dot, ".pack") != 0 || dot - name > 9) return false;
  uint32_t n = 0;
  for (const char* c = name; c < dot; ++c) {
    if (*c < '0' || *c > '9') return false;
    n = n * 10 + static_cast<uint32_t>(*c - '0');
  }
  *number = n;
  return true;
}

}  // namespace

LogPacks::LogPacks(std::string dir, int64_t rotate_bytes) : dir_(std::move(dir)), rotate_bytes_(rotate_bytes) {}

LogPacks::~LogPacks() {
  if (write_fd_ >= 0) close(write_fd_);
  for (auto& [pack, fd] : read_fds_) close(fd);
}

std::string LogPacks::PathOf(uint32_t pack) const { return fmt::format("{}/{:06}.pack", dir_, pack); }

Status LogPacks::Load() {
  std::vector<uint32_t> packs;
  if (DIR* dir = opendir(dir_.c_str())) {
    while (dirent* entry = readdir(dir)) {
      uint32_t number = 0;
      if (PackNumber(entry->d_name, &number)) packs.push_back(number);
    }
    closedir(dir);
  } else if (errno != ENOENT) {
    return Status::IOError(fmt::format("cannot list {}: {}", dir_, std::strerror(errno)));
  }
  std::sort(packs.begin(), packs.end());
  if (!packs.empty()) next_pack_ = packs.back() + 1;
  Status first_error = Status::Ok();
  for (uint32_t pack : packs) {
    Status loaded = LoadPack(pack);
    if (!loaded.ok() && first_error.ok()) first_error = loaded;
  }
  return first_error;
}

Status LogPacks::LoadPack(uint32_t pack) {
  const std::string path = PathOf(pack);
  live_bytes_[pack] += 0;  // on disk, even when nothing in it can be read
  ASSIGN_OR_RETURN(int fd, ReadFdOf(pack));
  struct stat st {};
  if (fstat(fd, &st) != 0) return Status::IOError(fmt::format("cannot stat {}: {}", path, std::strerror(errno)));
  const int64_t size = st.st_size;
  pack_bytes_[pack] = size;
  disk_bytes_ += size;
  // One read per record: its header and, nearly always, its whole key.
  std::string head(kHeaderBytes + 256, '\0');
  for (int64_t at = 0; at < size;) {
    const size_t want = static_cast<size_t>(std::min<int64_t>(static_cast<int64_t>(head.size()), size - at));
    if (want < kHeaderBytes) return Status::Corruption(fmt::format("{}: a torn record at byte {} is left out", path, at));
    RETURN_IF_ERROR(ReadExactlyAt(fd, head.data(), want, at, path));
    uint32_t key_bytes = 0, data_bytes = 0;
    std::memcpy(&key_bytes, head.data() + 4, 4);
    std::memcpy(&data_bytes, head.data() + 8, 4);
    if (std::memcmp(head.data(), kMagic, sizeof kMagic) != 0 || key_bytes == 0 || key_bytes > kMaxKeyBytes ||
        data_bytes > kMaxDataBytes) {
      return Status::Corruption(fmt::format("{}: no record at byte {}; the rest of the pack is left out", path, at));
    }
    const int64_t data_at = at + static_cast<int64_t>(kHeaderBytes + key_bytes);
    if (data_at + data_bytes > size) {
      return Status::Corruption(fmt::format("{}: a torn record at byte {} is left out", path, at));
    }
    std::string key;
    if (kHeaderBytes + key_bytes <= want) {
      key.assign(head.data() + kHeaderBytes, key_bytes);
    } else {
      key.resize(key_bytes);
      RETURN_IF_ERROR(ReadExactlyAt(fd, key.data(), key_bytes, at + static_cast<int64_t>(kHeaderBytes), path));
    }
    Log& log = logs_[key];
    log.pieces.push_back(Piece{data_at, pack, data_bytes});
    log.size += data_bytes;
    live_bytes_[pack] += data_bytes;
    at = data_at + data_bytes;
  }
  return Status::Ok();
}

Status LogPacks::OpenNextPack() {
  if (write_fd_ >= 0) close(write_fd_);
  write_fd_ = -1;
  if (writing_begun_) DropIfDead(writing_);  // the pack just finished, if every log in it went
  RETURN_IF_ERROR(MakeDirs(dir_, 0700));
  // O_EXCL: a pack is only ever appended to by the store that began it.
  // Another store may write packs in the same folder (the agents of one
  // machine's session share its logs folder): its numbers are skipped.
  for (int tries = 0;; ++tries) {
    writing_ = next_pack_++;
    const std::string path = PathOf(writing_);
    write_fd_ = open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (write_fd_ >= 0) break;
    if (errno != EEXIST || tries >= 1000) {
      return Status::IOError(fmt::format("cannot create {}: {}", path, std::strerror(errno)));
    }
  }
  write_end_ = 0;
  writing_begun_ = true;
  began_.insert(writing_);
  live_bytes_[writing_] += 0;
  pack_bytes_[writing_] += 0;
  return Status::Ok();
}

Status LogPacks::Append(const std::string& key, std::string_view data) {
  if (data.empty()) return Status::Ok();
  if (key.empty() || key.size() > kMaxKeyBytes || data.size() > kMaxDataBytes) {
    return Status::InvalidArgument(fmt::format("a pack holds no log of {} bytes under a key of {} bytes",
                                               data.size(), key.size()));
  }
  if (write_fd_ < 0 || write_end_ >= rotate_bytes_) RETURN_IF_ERROR(OpenNextPack());
  // One write for the whole record: concurrent readers of the pack (none
  // today) and a daemon killed mid-write see all of it or a torn tail.
  std::string record = Header(static_cast<uint32_t>(key.size()), static_cast<uint32_t>(data.size()));
  record.reserve(record.size() + key.size() + data.size());
  record += key;
  record.append(data.data(), data.size());
  Status written = WriteAllAt(write_fd_, record, -1, PathOf(writing_));
  if (!written.ok()) {
    // Cut the partial record off, or begin a new pack if even that fails,
    // so that the records after it are read in step.
    if (ftruncate(write_fd_, write_end_) != 0) {
      close(write_fd_);
      write_fd_ = -1;
    }
    return written;
  }
  Log& log = logs_[key];
  log.pieces.push_back(
      Piece{write_end_ + static_cast<int64_t>(kHeaderBytes + key.size()), writing_, static_cast<uint32_t>(data.size())});
  log.size += static_cast<int64_t>(data.size());
  live_bytes_[writing_] += static_cast<int64_t>(data.size());
  write_end_ += static_cast<int64_t>(record.size());
  pack_bytes_[writing_] += static_cast<int64_t>(record.size());
  disk_bytes_ += static_cast<int64_t>(record.size());
  return Status::Ok();
}

int64_t LogPacks::Size(const std::string& key) const {
  auto it = logs_.find(key);
  return it == logs_.end() ? 0 : it->second.size;
}

Result<int> LogPacks::ReadFdOf(uint32_t pack) const {
  if (auto it = read_fds_.find(pack); it != read_fds_.end()) return it->second;
  if (read_fds_.size() >= kReadFdsKept) {
    for (auto& [number, fd] : read_fds_) close(fd);
    read_fds_.clear();
  }
  const std::string path = PathOf(pack);
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::IOError(fmt::format("cannot open {}: {}", path, std::strerror(errno)));
  read_fds_[pack] = fd;
  return fd;
}

Result<std::string> LogPacks::Read(const std::string& key, int64_t offset, int64_t n) const {
  std::string out;
  auto it = logs_.find(key);
  if (it == logs_.end() || n <= 0) return out;
  out.reserve(static_cast<size_t>(std::min(n, it->second.size)));
  int64_t piece_begin = 0;
  for (const Piece& piece : it->second.pieces) {
    const int64_t piece_end = piece_begin + piece.length;
    if (piece_end > offset) {
      const int64_t from = std::max(offset, piece_begin) - piece_begin;
      const int64_t take = std::min<int64_t>(piece.length - from, n - static_cast<int64_t>(out.size()));
      ASSIGN_OR_RETURN(int fd, ReadFdOf(piece.pack));
      const size_t had = out.size();
      out.resize(had + static_cast<size_t>(take));
      RETURN_IF_ERROR(ReadExactlyAt(fd, out.data() + had, static_cast<size_t>(take), piece.offset + from,
                                    PathOf(piece.pack)));
      if (static_cast<int64_t>(out.size()) >= n) break;
    }
    piece_begin = piece_end;
  }
  return out;
}

void LogPacks::Forget(const std::string& key) {
  auto it = logs_.find(key);
  if (it == logs_.end()) return;
  std::vector<uint32_t> touched;
  for (const Piece& piece : it->second.pieces) {
    live_bytes_[piece.pack] -= piece.length;
    if (touched.empty() || touched.back() != piece.pack) touched.push_back(piece.pack);
  }
  logs_.erase(it);
  for (uint32_t pack : touched) DropIfDead(pack);
}

void LogPacks::DropIfDead(uint32_t pack) {
  auto live = live_bytes_.find(pack);
  if (live == live_bytes_.end() || live->second > 0 || (write_fd_ >= 0 && pack == writing_)) return;
  if (!own_loaded_ && began_.count(pack) == 0) return;  // another store's, maybe still written
  if (auto fd = read_fds_.find(pack); fd != read_fds_.end()) {
    close(fd->second);
    read_fds_.erase(fd);
  }
  // A pack that cannot be deleted is only dead weight: the next start
  // indexes it again, and the owner forgets what it does not want then.
  unlink(PathOf(pack).c_str());
  live_bytes_.erase(live);
  if (auto bytes = pack_bytes_.find(pack); bytes != pack_bytes_.end()) {
    disk_bytes_ -= bytes->second;
    pack_bytes_.erase(bytes);
  }
  began_.erase(pack);
}

std::vector<std::string> LogPacks::Keys() const {
  std::vector<std::string> keys;
  keys.reserve(logs_.size());
  for (const auto& [key, log] : logs_) keys.push_back(key);
  return keys;
}

}  // namespace clusterd
