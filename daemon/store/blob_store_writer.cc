#include "daemon/store/blob_store_writer.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "daemon/store/blob_files.h"
#include "daemon/store/blob_store.h"

namespace clusterd {

namespace {

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

BlobStoreWriter::BlobStoreWriter(BlobStore* store, std::string id, int64_t size, std::string temp_path, int fd)
    : store_(store), id_(std::move(id)), size_(size), temp_path_(std::move(temp_path)), fd_(fd) {}

BlobStoreWriter::~BlobStoreWriter() {
  if (!done_) store_->Abandon(this);
}

Status BlobStoreWriter::Append(const std::string& data) {
  if (done_) return Status::FailedPrecondition("write after the blob was finished");
  const int64_t end = written_ + static_cast<int64_t>(data.size());
  if (size_ >= 0 && end > size_) {
    return Status::InvalidArgument(fmt::format("blob {}: more than the {} bytes announced", id_, size_));
  }
  if (end > reserved_) RETURN_IF_ERROR(store_->Grow(this, end));
  RETURN_IF_ERROR(WriteAll(fd_, data.data(), data.size()).WithContext("writing " + temp_path_));
  hash_.Update(data.data(), data.size());
  written_ = end;
  return Status::Ok();
}

Status BlobStoreWriter::Commit() {
  if (done_) return Status::FailedPrecondition("blob already finished");
  if (size_ < 0) return Status::FailedPrecondition("an upload named at its end needs its id to finish");
  done_ = true;
  return store_->Finish(this);
}

Status BlobStoreWriter::Commit(const std::string& id, int64_t size) {
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

Status BlobStoreWriter::Seal() {
  Status result = Status::Ok();
  if (written_ != size_) {
    result = Status::InvalidArgument(fmt::format("blob {}: {} bytes arrived of the {} announced", id_, written_, size_));
  } else if (std::string got = hash_.HexDigest(); got != id_) {
    result = Status::Corruption(fmt::format("blob {}: the bytes that arrived hash to {}", id_, got));
  } else if (fsync(fd_) != 0) {
    result = Status::IOError(fmt::format("cannot sync {}: {}", temp_path_, std::strerror(errno)));
  }
  close(fd_);
  return result;
}

}  // namespace clusterd
