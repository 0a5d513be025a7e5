#include "common/storage/blob_client.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <utility>

#include <fmt/format.h>

#include "common/net/auth.h"
#include "common/file_util.h"
#include "common/net/grpc_status.h"
#include "common/sha256.h"

namespace clusterd {

BlobClient::BlobClient(const std::shared_ptr<grpc::Channel>& channel, std::string token, std::string head_address)
    : stub_(StoreService::NewStub(channel)), token_(std::move(token)), head_address_(std::move(head_address)) {}

ActiveCalls::Entry::Entry(ActiveCalls* calls, grpc::ClientContext* context) : calls_(calls), context_(context) {
  std::lock_guard<std::mutex> lock(calls_->mutex_);
  calls_->contexts_.insert(context_);
  if (calls_->cancelled_) context_->TryCancel();
}

ActiveCalls::Entry& ActiveCalls::Entry::operator=(Entry&& other) noexcept {
  if (this != &other) {
    this->~Entry();
    calls_ = std::exchange(other.calls_, nullptr);
    context_ = std::exchange(other.context_, nullptr);
  }
  return *this;
}

ActiveCalls::Entry::~Entry() {
  if (!calls_) return;
  std::lock_guard<std::mutex> lock(calls_->mutex_);
  calls_->contexts_.erase(context_);
  calls_ = nullptr;
}

void ActiveCalls::CancelAll() {
  std::lock_guard<std::mutex> lock(mutex_);
  cancelled_ = true;
  for (grpc::ClientContext* context : contexts_) context->TryCancel();
}

ActiveCalls::Entry BlobClient::Prepare(grpc::ClientContext* context, int64_t bytes) {
  AttachToken(context, token_);
  // A deadline that a slow but moving transfer does not hit (1 MiB/s),
  // and a dead head does not stretch for ever.
  int64_t seconds = 30 + bytes / (1 << 20);
  context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(seconds));
  return Track(context);
}

Status BlobClient::Explain(const grpc::Status& status, const std::string& what) const {
  if (status.ok()) return Status::Ok();
  Status ours = FromGrpc(status);
  if (status.error_code() == grpc::StatusCode::UNAVAILABLE) {
    ours = Status::Unavailable(fmt::format("cannot reach the store of {}: {}", where(),
                                           status.error_message()));
  } else if (status.error_code() == grpc::StatusCode::CANCELLED) {
    // The head stopping mid-call (or this process, CancelAll): a later try
    // may well find it, so out of reach rather than an internal error.
    ours = Status::Unavailable(fmt::format("the call to the store of {} was cancelled: {}", where(),
                                           status.error_message()));
  }
  return ours.WithContext(what);
}

Result<BlobInfo> BlobClient::Stat(const std::string& id) {
  grpc::ClientContext context;
  ActiveCalls::Entry call = Prepare(&context, 0);
  BlobId request;
  request.set_id(id);
  BlobInfo reply;
  grpc::Status status = stub_->StatBlob(&context, request, &reply);
  if (!status.ok()) return Explain(status, "looking up blob " + id);
  return reply;
}

Result<std::vector<std::string>> BlobClient::Missing(const std::vector<std::string>& ids) {
  grpc::ClientContext context;
  ActiveCalls::Entry call = Prepare(&context, 0);
  BlobIds request, reply;
  for (const std::string& id : ids) request.add_ids(id);
  grpc::Status status = stub_->MissingBlobs(&context, request, &reply);
  if (!status.ok()) return Explain(status, "asking the head's store what it lacks");
  return std::vector<std::string>(reply.ids().begin(), reply.ids().end());
}

Status BlobClient::Send(const std::string& id, int64_t size, const FillFn& fill, const std::string& what,
                        const ProgressFn& progress) {
  grpc::ClientContext context;
  ActiveCalls::Entry call = Prepare(&context, size);
  BlobInfo reply;
  auto writer = stub_->PutBlob(&context, &reply);
  BlobChunk chunk;
  chunk.set_id(id);
  chunk.set_size(size);
  int64_t sent = 0;
  bool open_stream = true;
  do {
    // The buffer keeps its size from one message to the next, so resize
    // zero-fills nothing that fill() is about to overwrite (only the last
    // message shrinks it).
    std::string* data = chunk.mutable_data();
    data->resize(static_cast<size_t>(std::min(kChunkBytes, size - sent)));
    Status filled = fill(data->data(), data->size(), sent);
    if (!filled.ok()) {
      context.TryCancel();
      writer->Finish();
      return filled;
    }
    // A refused write means the head ended the call: Finish says why.
    open_stream = writer->Write(chunk);
    sent += static_cast<int64_t>(data->size());
    if (progress) progress(sent, size);
    chunk.clear_id();
    chunk.clear_size();
  } while (open_stream && sent < size);
  if (open_stream) writer->WritesDone();
  grpc::Status status = writer->Finish();
  if (status.error_code() == grpc::StatusCode::ALREADY_EXISTS) return Status::Ok();
  return Explain(status, fmt::format("uploading {} to the head", what));
}

Status BlobClient::Upload(const std::string& id, const std::string& path, const ProgressFn& progress) {
  UniqueFd file{open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (file.get() < 0) return Status::IOError(fmt::format("cannot open {}: {}", path, std::strerror(errno)));
  int64_t size = lseek(file.get(), 0, SEEK_END);
  if (size < 0) return Status::IOError(fmt::format("cannot size {}: {}", path, std::strerror(errno)));
  return UploadRange(id, path, 0, size, progress);
}

Status BlobClient::UploadRange(const std::string& id, const std::string& path, int64_t offset, int64_t length,
                               const ProgressFn& progress) {
  UniqueFd file{open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (file.get() < 0) return Status::IOError(fmt::format("cannot open {}: {}", path, std::strerror(errno)));
  auto fill = [&](char* data, size_t n, int64_t at) {
    size_t filled = 0;
    while (filled < n) {
      ssize_t got = pread(file.get(), data + filled, n - filled, offset + at + static_cast<int64_t>(filled));
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) return Status::IOError(fmt::format("cannot read {}: {}", path, std::strerror(errno)));
      if (got == 0) return Status::IOError(fmt::format("{} changed while it was being sent", path));
      filled += static_cast<size_t>(got);
    }
    return Status::Ok();
  };
  return Send(id, length, fill, path, progress);
}

Status BlobClient::UploadData(const std::string& id, const std::string& data) {
  auto fill = [&](char* out, size_t n, int64_t at) {
    std::memcpy(out, data.data() + at, n);
    return Status::Ok();
  };
  return Send(id, static_cast<int64_t>(data.size()), fill, "blob " + id, nullptr);
}

Status BlobClient::Receive(const std::string& id, int64_t size, int64_t max_bytes, const SinkFn& sink,
                           const ProgressFn& progress) {
  grpc::ClientContext context;
  ActiveCalls::Entry call = Prepare(&context, size >= 0 ? size : max_bytes);
  GetBlobRequest request;
  request.set_id(id);
  auto reader = stub_->GetBlob(&context, request);
  BlobChunk chunk;
  Sha256 hash;
  int64_t received = 0, total = size;
  bool first = true;
  Status failed;
  while (failed.ok() && reader->Read(&chunk)) {
    const std::string& data = chunk.data();
    if (first) {
      // The first message announces the blob's whole size.
      first = false;
      if (size >= 0 && chunk.size() != size) {
        failed = Status::Corruption(
            fmt::format("blob {} is {} bytes on the head, {} were expected", id, chunk.size(), size));
      } else if (chunk.size() > max_bytes) {
        failed = Status::ResourceExhausted(
            fmt::format("blob {} is {} bytes, more than the {} allowed here", id, chunk.size(), max_bytes));
      }
      total = chunk.size();
    }
    if (failed.ok() && received + static_cast<int64_t>(data.size()) > total) {
      failed = Status::Corruption(fmt::format("blob {}: more than the {} bytes announced arrived", id, total));
    }
    if (failed.ok()) failed = sink(data, received);
    if (!failed.ok()) break;
    hash.Update(data.data(), data.size());
    received += static_cast<int64_t>(data.size());
    if (progress) progress(received, total);
  }
  if (!failed.ok()) {
    context.TryCancel();
    reader->Finish();
    return failed;
  }
  grpc::Status status = reader->Finish();
  if (!status.ok()) return Explain(status, "downloading blob " + id);
  if (received != total) {
    return Status::Corruption(fmt::format("blob {}: {} bytes arrived of {}", id, received, total));
  }
  std::string got = hash.HexDigest();
  if (got != id) return HashMismatch(id, got, total);
  return Status::Ok();
}

Status BlobClient::HashMismatch(const std::string& id, const std::string& got, int64_t size) {
  grpc::ClientContext context;
  ActiveCalls::Entry call = Prepare(&context, size);  // the head reads it all again
  BlobId request;
  request.set_id(id);
  request.set_suspect(true);
  BlobInfo reply;
  grpc::Status status = stub_->StatBlob(&context, request, &reply);
  std::string found;
  if (!status.ok()) {
    found = "; the head could not check its copy: " + status.error_message();
  } else if (!reply.present()) {
    found = "; the head's copy was corrupt and is dropped (a package comes again with the next submit; a checkpoint "
            "or outputs are lost)";
  } else {
    found = "; the head's copy is intact, so the bytes were damaged on the way";
  }
  return Status::Corruption(
      fmt::format("blob {} from the head failed its hash check (its bytes hash to {}){}", id, got, found));
}

Status BlobClient::Download(const std::string& id, const std::string& path, const ProgressFn& progress) {
  UniqueFd file{open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600)};
  if (file.get() < 0) return Status::IOError(fmt::format("cannot create {}: {}", path, std::strerror(errno)));
  auto fail = [&](Status status) {
    unlink(path.c_str());
    return status;
  };
  auto size = Stat(id);
  if (!size.ok()) return fail(size.status());
  if (!size->present()) return fail(Status::NotFound(fmt::format("the head's store has no blob {}", id)));
  auto sink = [&](const std::string& data, int64_t /*at*/) {
    size_t done = 0;
    while (done < data.size()) {
      ssize_t n = write(file.get(), data.data() + done, data.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return Status::IOError(fmt::format("cannot write {}: {}", path, std::strerror(errno)));
      done += static_cast<size_t>(n);
    }
    return Status::Ok();
  };
  Status received = Receive(id, size->size(), size->size(), sink, progress);
  if (!received.ok()) return fail(received);
  if (fsync(file.get()) != 0) return fail(Status::IOError(fmt::format("cannot sync {}: {}", path, std::strerror(errno))));
  return Status::Ok();
}

Status BlobClient::DownloadRange(const std::string& id, int fd, int64_t offset, int64_t size, const std::string& path,
                                 const ProgressFn& progress, int /*streams: one gRPC stream a blob*/) {
  auto sink = [&](const std::string& data, int64_t at) {
    size_t done = 0;
    while (done < data.size()) {
      ssize_t n = pwrite(fd, data.data() + done, data.size() - done, offset + at + static_cast<int64_t>(done));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return Status::IOError(fmt::format("cannot write {}: {}", path, std::strerror(errno)));
      done += static_cast<size_t>(n);
    }
    return Status::Ok();
  };
  return Receive(id, size, size, sink, progress);
}

Result<std::string> BlobClient::Fetch(const std::string& id, int64_t max_bytes) {
  std::string out;
  auto sink = [&](const std::string& data, int64_t /*at*/) {
    out += data;
    return Status::Ok();
  };
  RETURN_IF_ERROR(Receive(id, -1, max_bytes, sink, nullptr));
  return out;
}

}  // namespace clusterd
