#include "daemon/head/journal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/logging.h"

namespace clusterd {
namespace {

constexpr uint32_t kCrcMaskDelta = 0xa282ead8u;

void PutU32(char* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

uint32_t GetU32(const char* in) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(static_cast<unsigned char>(in[i])) << (8 * i);
  return v;
}

std::string FileHeader() {
  std::string h(kJournalHeaderBytes, '\0');
  std::memcpy(h.data(), kJournalMagic, 4);
  PutU32(h.data() + 4, kJournalVersion);
  return h;
}

Status Errno(const std::string& what, const std::string& path) {
  return Status::IOError(what + " " + path + ": " + std::strerror(errno));
}

// Reads exactly n bytes at offset; fewer means the file shrank under us.
Status ReadAt(int fd, const std::string& path, uint64_t offset, char* out, size_t n) {
  while (n > 0) {
    ssize_t r = ::pread(fd, out, n, static_cast<off_t>(offset));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return Errno("read", path);
    if (r == 0) return Status::IOError("read " + path + ": unexpected end of file");
    out += r;
    offset += static_cast<uint64_t>(r);
    n -= static_cast<size_t>(r);
  }
  return Status::Ok();
}

Status WriteAt(int fd, const std::string& path, uint64_t offset, std::string_view data) {
  while (!data.empty()) {
    ssize_t w = ::pwrite(fd, data.data(), data.size(), static_cast<off_t>(offset));
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return Errno("write", path);
    offset += static_cast<uint64_t>(w);
    data.remove_prefix(static_cast<size_t>(w));
  }
  return Status::Ok();
}

// A new or renamed file survives a crash only once its directory entry is synced.
Status SyncParentDir(const std::string& path) {
  auto slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Errno("open directory", dir);
  int rc = ::fsync(fd);
  Status st = rc == 0 ? Status::Ok() : Errno("fsync directory", dir);
  ::close(fd);
  return st;
}

std::string Record(std::string_view payload) {
  std::string rec(kRecordHeaderBytes, '\0');
  PutU32(rec.data(), static_cast<uint32_t>(payload.size()));
  PutU32(rec.data() + 4, RecordCrc(payload));
  rec.append(payload);
  return rec;
}

// Checks the file header. Returns false in *whole when the file is shorter
// than a header whose bytes so far are right (a crash while creating it).
Status CheckHeader(int fd, const std::string& path, uint64_t file_bytes, bool* whole) {
  const std::string want = FileHeader();
  std::string got(std::min<uint64_t>(file_bytes, kJournalHeaderBytes), '\0');
  RETURN_IF_ERROR(ReadAt(fd, path, 0, got.data(), got.size()));
  size_t magic_len = std::min<size_t>(got.size(), 4);
  if (got.compare(0, magic_len, want, 0, magic_len) != 0) {
    return Status::Corruption(path + ": not a clusterd journal (bad magic, want \"CLJ1\")");
  }
  *whole = got.size() == kJournalHeaderBytes;
  if (!*whole) return Status::Ok();
  uint32_t version = GetU32(got.data() + 4);
  if (version != kJournalVersion) {
    return Status::FailedPrecondition(path + ": journal version " + std::to_string(version) +
                                      " is not supported (want " + std::to_string(kJournalVersion) + ")");
  }
  return Status::Ok();
}

Status ReadRecords(int fd, const std::string& path, ReplayResult* out) {
  uint64_t off = kJournalHeaderBytes;
  char header[kRecordHeaderBytes];
  while (off < out->file_bytes) {
    uint64_t left = out->file_bytes - off;
    if (left < kRecordHeaderBytes) {
      out->end = JournalEnd::kTornTail;
      out->note = "torn record header at offset " + std::to_string(off) + " (" + std::to_string(left) + " bytes)";
      break;
    }
    RETURN_IF_ERROR(ReadAt(fd, path, off, header, sizeof header));
    uint32_t len = GetU32(header);
    uint32_t crc = GetU32(header + 4);
    if (len > kMaxRecordBytes) {
      out->end = JournalEnd::kCorruption;
      out->note = "record at offset " + std::to_string(off) + " claims " + std::to_string(len) +
                  " bytes, above the " + std::to_string(kMaxRecordBytes) + " limit";
      break;
    }
    if (len > left - kRecordHeaderBytes) {
      out->end = JournalEnd::kTornTail;
      out->note = "torn record at offset " + std::to_string(off) + ": " + std::to_string(len) +
                  " bytes declared, " + std::to_string(left - kRecordHeaderBytes) + " present";
      break;
    }
    std::string payload(len, '\0');
    RETURN_IF_ERROR(ReadAt(fd, path, off + kRecordHeaderBytes, payload.data(), len));
    if (RecordCrc(payload) != crc) {
      out->end = JournalEnd::kCorruption;
      out->note = "checksum mismatch in record at offset " + std::to_string(off);
      break;
    }
    out->records.push_back(std::move(payload));
    off += kRecordHeaderBytes + len;
    out->valid_bytes = off;
  }
  return Status::Ok();
}

// Copies [from, EOF) to a fresh "<path>.dropped.<from>[.N]" so that a repair
// never destroys bytes an operator might still want.
Status SaveDroppedBytes(int fd, const std::string& path, uint64_t from, uint64_t to, std::string* saved_as) {
  std::string base = path + ".dropped." + std::to_string(from);
  int out = -1;
  for (int n = 0; n < 1000 && out < 0; ++n) {
    *saved_as = n == 0 ? base : base + "." + std::to_string(n);
    out = ::open(saved_as->c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (out < 0 && errno != EEXIST) return Errno("create", *saved_as);
  }
  if (out < 0) return Status::IOError("too many " + base + ".* files");
  // Copied in chunks: after an early corruption the tail can be most of the file.
  Status st = Status::Ok();
  std::string chunk;
  for (uint64_t off = from; st.ok() && off < to;) {
    chunk.resize(std::min<uint64_t>(to - off, 1u << 20));
    st = ReadAt(fd, path, off, chunk.data(), chunk.size());
    if (st.ok()) st = WriteAt(out, *saved_as, off - from, chunk);
    off += chunk.size();
  }
  if (st.ok() && ::fsync(out) != 0) st = Errno("fsync", *saved_as);
  ::close(out);
  if (st.ok()) st = SyncParentDir(*saved_as);
  return st;
}

}  // namespace

uint32_t MaskCrc(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + kCrcMaskDelta; }

uint32_t UnmaskCrc(uint32_t masked) {
  uint32_t rot = masked - kCrcMaskDelta;
  return (rot >> 17) | (rot << 15);
}

uint32_t RecordCrc(std::string_view payload) {
  // zlib's crc32 takes uInt lengths; payloads are capped at 64 MiB, so one call.
  uLong crc = ::crc32(0L, reinterpret_cast<const Bytef*>(payload.data()), static_cast<uInt>(payload.size()));
  return MaskCrc(static_cast<uint32_t>(crc));
}

Result<ReplayResult> ReadJournal(const std::string& path) {
  ReplayResult out;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT) return out;
  if (fd < 0) return Errno("open", path);
  struct stat st {};
  Status status = ::fstat(fd, &st) == 0 ? Status::Ok() : Errno("stat", path);
  if (status.ok()) {
    out.file_bytes = static_cast<uint64_t>(st.st_size);
    bool whole = false;
    if (out.file_bytes > 0) status = CheckHeader(fd, path, out.file_bytes, &whole);
    if (status.ok() && whole) {
      out.valid_bytes = kJournalHeaderBytes;
      status = ReadRecords(fd, path, &out);
    } else if (status.ok() && out.file_bytes > 0) {
      out.end = JournalEnd::kTornTail;
      out.note = "torn file header (" + std::to_string(out.file_bytes) + " bytes)";
    }
  }
  ::close(fd);
  if (!status.ok()) return status;
  return out;
}

JournalWriter::JournalWriter(std::string path, int fd, uint64_t size)
    : path_(std::move(path)), fd_(fd), size_(size) {}

JournalWriter::~JournalWriter() {
  if (fd_ >= 0) ::close(fd_);
}

Result<std::unique_ptr<JournalWriter>> JournalWriter::Open(const std::string& path, ReplayResult* replay) {
  ASSIGN_OR_RETURN(ReplayResult read, ReadJournal(path));
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return Errno("open", path);
  std::unique_ptr<JournalWriter> writer(new JournalWriter(path, fd, read.valid_bytes));

  if (read.valid_bytes < read.file_bytes) {
    std::string saved_as;
    RETURN_IF_ERROR(SaveDroppedBytes(fd, path, read.valid_bytes, read.file_bytes, &saved_as));
    if (::ftruncate(fd, static_cast<off_t>(read.valid_bytes)) != 0) return Errno("truncate", path);
    if (::fsync(fd) != 0) return Errno("fsync", path);
    // A torn tail is the expected leftover of a crash; corruption is not.
    const LogLevel level = read.end == JournalEnd::kCorruption ? LogLevel::kError : LogLevel::kWarning;
    Log(level, "journal {}: dropped {} bytes after offset {} ({}); saved them to {}", path,
        read.file_bytes - read.valid_bytes, read.valid_bytes, read.note, saved_as);
  }
  if (read.valid_bytes == 0) {
    // New, empty, or only a torn header: start the file over.
    RETURN_IF_ERROR(WriteAt(fd, path, 0, FileHeader()));
    if (::fsync(fd) != 0) return Errno("fsync", path);
    RETURN_IF_ERROR(SyncParentDir(path));
    writer->size_ = kJournalHeaderBytes;
  }
  if (replay != nullptr) *replay = std::move(read);
  return std::move(writer);
}

Status JournalWriter::Append(std::string_view payload) {
  const uint64_t before = size_;
  RETURN_IF_ERROR(Write(payload));
  if (::fdatasync(fd_) != 0) {
    Status sync_err = Errno("fdatasync", path_);
    broken_ = sync_err.message();
    // The caller is told this record was not written; try not to leave it
    // where a reader would find it after all. Best effort: the writer is
    // unusable from here on either way.
    size_ = before;
    if (::ftruncate(fd_, static_cast<off_t>(size_)) == 0) ::fdatasync(fd_);
    return sync_err;
  }
  return Status::Ok();
}

Status JournalWriter::Write(std::string_view payload) {
  if (!broken_.empty()) return Status::IOError("journal " + path_ + " unusable: " + broken_);
  if (payload.size() > kMaxRecordBytes) {
    return Status::InvalidArgument("journal record of " + std::to_string(payload.size()) +
                                   " bytes exceeds the " + std::to_string(kMaxRecordBytes) + " byte limit");
  }
  const std::string rec = Record(payload);
  Status st = WriteAt(fd_, path_, size_, rec);
  if (!st.ok()) {
    // Cut off whatever part of the record made it, so the next Append does
    // not land behind garbage that would hide it from the reader.
    if (::ftruncate(fd_, static_cast<off_t>(size_)) != 0) {
      broken_ = "could not truncate a partial record: " + std::string(std::strerror(errno));
    }
    return st;
  }
  size_ += rec.size();
  return Status::Ok();
}

Result<std::unique_ptr<JournalRewrite>> JournalRewrite::Begin(const std::string& path) {
  const std::string tmp = path + ".compact";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Errno("create", tmp);
  std::unique_ptr<JournalRewrite> rewrite(new JournalRewrite(path, tmp, fd));
  rewrite->buffer_ = FileHeader();
  return rewrite;
}

JournalRewrite::~JournalRewrite() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(tmp_.c_str());
}

Status JournalRewrite::Add(std::string_view payload) {
  if (payload.size() > kMaxRecordBytes) return Status::InvalidArgument("journal record exceeds the size limit");
  buffer_ += Record(payload);
  return buffer_.size() >= kFlushBytes ? Flush() : Status::Ok();
}

Status JournalRewrite::Flush() {
  RETURN_IF_ERROR(WriteAt(fd_, tmp_, written_, buffer_));
  written_ += buffer_.size();
  buffer_.clear();
  return Status::Ok();
}

Status JournalRewrite::Commit() {
  RETURN_IF_ERROR(Flush());
  if (::fsync(fd_) != 0) return Errno("fsync", tmp_);
  ::close(fd_);
  fd_ = -1;
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) return Errno("rename onto " + path_ + " from", tmp_);
  committed_ = true;
  return SyncParentDir(path_);
}

}  // namespace clusterd
