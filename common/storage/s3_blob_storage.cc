#include "common/storage/s3_blob_storage.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <random>
#include <thread>

#include <fmt/format.h>

#include "common/file_util.h"
#include "common/prefetch_queue.h"
#include "common/storage/range_hasher.h"
#include "common/run_tasks.h"
#include "common/sha256.h"

namespace clusterd {

namespace {

constexpr int kStatThreads = 8;  // HEAD requests at once when asking what is missing

// A download starts the writeback of each this many bytes as they land,
// so that the fsync before the rename finds them on their way to disk.
constexpr int64_t kWritebackBytes = int64_t{1} << 20;

bool ValidId(const std::string& id) {
  return id.size() == 64 && std::all_of(id.begin(), id.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

Status BadId(const std::string& id) {
  return Status::InvalidArgument(fmt::format("'{}' is not a blob id (64 hex digits)", id.substr(0, 80)));
}

std::string RandomName() {
  std::random_device device;
  return fmt::format("{:016x}{:016x}", (uint64_t{device()} << 32) | device(), (uint64_t{device()} << 32) | device());
}

Status WriteAll(int fd, const char* data, size_t n, int64_t at, const std::string& path) {
  size_t done = 0;
  while (done < n) {
    ssize_t got = at >= 0 ? pwrite(fd, data + done, n - done, at + static_cast<int64_t>(done))
                          : write(fd, data + done, n - done);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return Status::IOError(fmt::format("cannot write {}: {}", path, std::strerror(errno)));
    done += static_cast<size_t>(got);
  }
  return Status::Ok();
}

// A package streamed to PREFIX/tmp/ while it is packed and hashed, copied
// to its id's key by the server once the id is known.
class S3BlobWriter final : public BlobWriter {
 public:
  S3BlobWriter(S3BlobStorage* store, std::string what)
      : store_(store), what_(std::move(what)), temp_key_(store->TempKey(RandomName())),
        writer_(store->client().StartWrite(store->location().bucket, temp_key_)) {}

  ~S3BlobWriter() override {
    // A writer dropped before it finished aborts its own upload; a
    // finished temporary object is removed once copied.
    if (finished_ && wrote_temp_) store_->client().Delete(store_->location().bucket, temp_key_);
  }

  Status Write(const char* data, size_t size) override {
    RETURN_IF_ERROR(failed_);
    hash_.Update(data, size);
    failed_ = writer_->Write(data, size);
    return failed_.WithContext(what_.empty() ? "uploading" : "uploading " + what_);
  }

  Status Finish(const std::string& id) override {
    RETURN_IF_ERROR(failed_);
    finished_ = true;
    if (!ValidId(id)) return failed_ = BadId(id);
    if (std::string got = hash_.HexDigest(); got != id) {
      return failed_ = Status::Corruption(
                 fmt::format("{}: its bytes hash to {}, not to the id {} it was sent as", what_, got, id));
    }
    auto present = store_->Stat(id);
    if (!present.ok()) return failed_ = present.status();
    if (present->present()) return Status::Ok();  // the writer is dropped: the upload aborted
    failed_ = writer_->Finish();
    RETURN_IF_ERROR(failed_);
    wrote_temp_ = true;
    failed_ = store_->client().Copy(store_->location().bucket, temp_key_, store_->KeyOf(id));
    return failed_;
  }

  int64_t bytes() const override { return writer_->bytes(); }

 private:
  S3BlobStorage* store_;
  std::string what_;
  std::string temp_key_;
  std::unique_ptr<S3Client::Writer> writer_;
  Sha256 hash_;
  Status failed_;
  bool finished_ = false;
  bool wrote_temp_ = false;
};

// A GET read piece by piece: a thread of its own receives and hashes up to
// kReadAhead pieces of about 1 MiB ahead of the consumer (PrefetchQueue).
class S3BlobDownload final : public ByteSource {
 public:
  S3BlobDownload(S3BlobStorage* store, std::string id) : store_(store), id_(std::move(id)) {
    thread_ = std::thread([this] { Receive(); });
  }
  ~S3BlobDownload() override {
    pieces_.Stop();
    thread_.join();
  }

  Status Next(std::string_view* piece) override { return pieces_.Next(piece); }

  Status Finish() override {
    return pieces_.Drain();  // Receive checked the hash before it ended
  }

 private:
  static constexpr size_t kReadAhead = 4;
  static constexpr size_t kPiece = 1 << 20;

  Status Hand(std::string* pending) {
    if (!pieces_.Push(std::move(*pending))) return Status::Unavailable("download of blob " + id_ + " abandoned");
    *pending = pieces_.TakeFree().value_or(std::string());
    return Status::Ok();
  }

  // The receiving thread. The hash is checked once the last byte is in,
  // before the end is signalled: Finish (or the last Next) reports it.
  void Receive() {
    std::string pending;
    Status status = store_->Stream(id_, -1, -1, [&](const char* data, size_t n) {
      pending.append(data, n);
      return pending.size() >= kPiece ? Hand(&pending) : Status::Ok();
    }, nullptr);
    if (status.ok() && !pending.empty()) status = Hand(&pending);
    pieces_.End(status);
  }

  S3BlobStorage* store_;
  const std::string id_;
  PrefetchQueue pieces_{kReadAhead};
  std::thread thread_;
};

}  // namespace

S3BlobStorage::S3BlobStorage(S3ClientOptions options, S3Location location)
    : client_(std::move(options)), location_(std::move(location)) {}

std::string S3BlobStorage::where() const { return fmt::format("{} at {}", location_.ToString(), client_.endpoint()); }

std::string S3BlobStorage::KeyOf(const std::string& id) const {
  return (location_.prefix.empty() ? "" : location_.prefix + "/") + "blobs/" + id;
}

std::string S3BlobStorage::TempKey(const std::string& name) const {
  return (location_.prefix.empty() ? "" : location_.prefix + "/") + "tmp/" + name;
}

Status S3BlobStorage::Check() { return client_.CheckBucket(location_.bucket); }

Result<BlobInfo> S3BlobStorage::Stat(const std::string& id) {
  if (!ValidId(id)) return BadId(id);
  BlobInfo info;
  info.set_id(id);
  auto size = client_.Head(location_.bucket, KeyOf(id));
  if (!size.ok() && size.status().code() != Status::Code::kNotFound) return size.status();
  info.set_present(size.ok());
  info.set_size(size.ok() ? *size : 0);
  return info;
}

Result<std::vector<std::string>> S3BlobStorage::Missing(const std::vector<std::string>& ids) {
  for (const std::string& id : ids) {
    if (!ValidId(id)) return BadId(id);
  }
  // One HEAD per id, a few at once: S3 has no batch lookup, and a listing
  // of the whole prefix grows with everything ever stored.
  std::vector<char> lacking(ids.size(), 0);
  std::atomic<size_t> next{0};
  std::mutex mutex;
  Status failed;
  auto work = [&] {
    for (size_t i = next++; i < ids.size(); i = next++) {
      auto info = Stat(ids[i]);
      std::lock_guard<std::mutex> lock(mutex);
      if (!info.ok()) {
        if (failed.ok()) failed = info.status();
        return;
      }
      lacking[i] = !info->present();
    }
  };
  std::vector<std::thread> threads;
  for (size_t i = 0; i < std::min<size_t>(kStatThreads, ids.size()); ++i) threads.emplace_back(work);
  for (auto& thread : threads) thread.join();
  RETURN_IF_ERROR(failed);
  std::vector<std::string> missing;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (lacking[i]) missing.push_back(ids[i]);
  }
  return missing;
}

Status S3BlobStorage::Upload(const std::string& id, const std::string& path, const ProgressFn& progress) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::IOError(fmt::format("cannot open {}: {}", path, std::strerror(errno)));
  int64_t size = lseek(fd, 0, SEEK_END);
  close(fd);
  if (size < 0) return Status::IOError(fmt::format("cannot size {}: {}", path, std::strerror(errno)));
  ASSIGN_OR_RETURN(BlobInfo info, Stat(id));
  if (info.present()) return Status::Ok();
  return UploadRange(id, path, 0, size, progress);
}

Status S3BlobStorage::UploadRange(const std::string& id, const std::string& path, int64_t offset, int64_t length,
                                  const ProgressFn& progress) {
  if (!ValidId(id)) return BadId(id);
  // The id is the bytes' SHA-256: S3 checks the upload against it, and a
  // multipart upload hashes each part on the way instead.
  Status put = client_.PutFile(location_.bucket, KeyOf(id), path, offset, length,
                               length > client_.options().part_bytes ? "" : id, progress);
  if (put.code() == Status::Code::kCorruption) {
    return Status::IOError(fmt::format("{} changed while it was being sent ({})", path, put.message()));
  }
  return put;
}

Status S3BlobStorage::UploadData(const std::string& id, const std::string& data) {
  if (!ValidId(id)) return BadId(id);
  if (Sha256Hex(data) != id) return Status::Corruption(fmt::format("data sent as blob {} hashes otherwise", id));
  return client_.PutData(location_.bucket, KeyOf(id), data);
}

std::unique_ptr<ByteSource> S3BlobStorage::OpenDownload(const std::string& id, int64_t /*size_hint*/) {
  return std::make_unique<S3BlobDownload>(this, id);
}

std::unique_ptr<BlobWriter> S3BlobStorage::StartUpload(int64_t /*size_hint*/, const std::string& what) {
  return std::make_unique<S3BlobWriter>(this, what);
}

Status S3BlobStorage::Stream(const std::string& id, int64_t size, int64_t max_bytes, const S3Client::SinkFn& sink,
                              const ProgressFn& progress) {
  if (!ValidId(id)) return BadId(id);
  Sha256 hash;
  int64_t received = 0;
  Status got = client_.Get(location_.bucket, KeyOf(id), [&](const char* data, size_t n) {
    if (max_bytes >= 0 && received + static_cast<int64_t>(n) > max_bytes) {
      return Status::ResourceExhausted(fmt::format("blob {} is more than the {} bytes allowed here", id, max_bytes));
    }
    if (size >= 0 && received + static_cast<int64_t>(n) > size) {
      return Status::Corruption(fmt::format("blob {} in {} is more than the {} bytes expected", id, where(), size));
    }
    RETURN_IF_ERROR(sink(data, n));
    hash.Update(data, n);
    received += static_cast<int64_t>(n);
    if (progress) progress(received, size);
    return Status::Ok();
  });
  if (got.code() == Status::Code::kNotFound) {
    return Status::NotFound(fmt::format("{} has no blob {}", where(), id));
  }
  RETURN_IF_ERROR(got);
  if (size >= 0 && received != size) {
    return Status::Corruption(fmt::format("blob {}: {} bytes arrived of {}", id, received, size));
  }
  if (std::string digest = hash.HexDigest(); digest != id) {
    return Status::Corruption(
        fmt::format("blob {} from {} failed its hash check (its bytes hash to {})", id, where(), digest));
  }
  return Status::Ok();
}

Result<std::string> S3BlobStorage::Fetch(const std::string& id, int64_t max_bytes) {
  std::string out;
  RETURN_IF_ERROR(Stream(id, -1, max_bytes, [&](const char* data, size_t n) {
    out.append(data, n);
    return Status::Ok();
  }, nullptr));
  return out;
}

Status S3BlobStorage::DownloadRange(const std::string& id, int fd, int64_t offset, int64_t size,
                                    const std::string& path, const ProgressFn& progress, int streams) {
  const int ranges = static_cast<int>(std::min<int64_t>(streams, size / kMinRangeBytes));
  if (ranges > 1) return DownloadInRanges(id, fd, offset, size, path, progress, ranges);
  int64_t at = offset;
  int64_t unsynced = offset;
  return Stream(id, size, size, [&](const char* data, size_t n) {
    RETURN_IF_ERROR(WriteAll(fd, data, n, at, path));
    at += static_cast<int64_t>(n);
    if (at - unsynced >= kWritebackBytes || at == offset + size) {
      StartWriteback(fd, unsynced, at - unsynced);
      unsynced = at;
    }
    return Status::Ok();
  }, progress);
}

Status S3BlobStorage::DownloadInRanges(const std::string& id, int fd, int64_t offset, int64_t size,
                                       const std::string& path, const ProgressFn& progress, int ranges) {
  if (!ValidId(id)) return BadId(id);
  const int64_t part = (size + ranges - 1) / ranges;
  std::vector<int64_t> sizes;
  for (int64_t from = 0; from < size; from += part) sizes.push_back(std::min(part, size - from));
  // The ranges come apart, so the blob is hashed in order as they land
  // (read back from the page cache) and whole before anyone may use it.
  RangeHasher hasher(fd, offset, sizes, path);
  std::mutex mutex;
  int64_t done = 0;
  Status got = RunTasks(ranges, sizes.size(), [&](size_t i) {
    const int64_t from = static_cast<int64_t>(i) * part;
    int64_t at = offset + from;
    int64_t unsynced = at;
    const int64_t end = at + sizes[i];
    return client_.GetRange(location_.bucket, KeyOf(id), from, sizes[i], [&](const char* data, size_t n) {
      RETURN_IF_ERROR(WriteAll(fd, data, n, at, path));
      at += static_cast<int64_t>(n);
      if (at - unsynced >= kWritebackBytes || at == end) {
        StartWriteback(fd, unsynced, at - unsynced);
        unsynced = at;
      }
      {
        std::lock_guard<std::mutex> lock(mutex);
        done += static_cast<int64_t>(n);
        if (progress) progress(done, size);
      }
      return hasher.Wrote(i, static_cast<int64_t>(n));
    });
  });
  if (got.code() == Status::Code::kNotFound) return Status::NotFound(fmt::format("{} has no blob {}", where(), id));
  RETURN_IF_ERROR(got);
  ASSIGN_OR_RETURN(std::string digest, hasher.Finish());
  if (digest != id) {
    return Status::Corruption(
        fmt::format("blob {} from {} failed its hash check (its bytes hash to {})", id, where(), digest));
  }
  return Status::Ok();
}

Status S3BlobStorage::Download(const std::string& id, const std::string& path, const ProgressFn& progress) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return Status::IOError(fmt::format("cannot create {}: {}", path, std::strerror(errno)));
  Status status = Stream(id, -1, -1, [&](const char* data, size_t n) { return WriteAll(fd, data, n, -1, path); },
                          progress);
  if (status.ok() && fsync(fd) != 0) {
    status = Status::IOError(fmt::format("cannot sync {}: {}", path, std::strerror(errno)));
  }
  close(fd);
  if (!status.ok()) unlink(path.c_str());
  return status;
}

}  // namespace clusterd
