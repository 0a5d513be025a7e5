#include "common/blob_client.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "common/auth.h"
#include "common/grpc_status.h"
#include "common/sha256.h"

namespace clusterd {

namespace {

constexpr int64_t kChunkBytes = 1 << 20;

// Closes a descriptor on every path out.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) close(fd);
  }
};

}  // namespace

BlobClient::BlobClient(const std::shared_ptr<grpc::Channel>& channel, std::string token, std::string head_address)
    : stub_(StoreService::NewStub(channel)), token_(std::move(token)), head_address_(std::move(head_address)) {}

void BlobClient::Prepare(grpc::ClientContext* context, int64_t bytes) const {
  AttachToken(context, token_);
  // A deadline that a slow but moving transfer does not hit (1 MiB/s),
  // and a dead head does not stretch for ever.
  int64_t seconds = 30 + bytes / (1 << 20);
  context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(seconds));
}

Status BlobClient::Explain(const grpc::Status& status, const std::string& what) const {
  if (status.ok()) return Status::Ok();
  Status ours = FromGrpc(status);
  if (status.error_code() == grpc::StatusCode::UNAVAILABLE) {
    ours = Status::Unavailable(fmt::format("cannot reach the head's store at {}: {}", head_address_,
                                           status.error_message()));
  }
  return ours.WithContext(what);
}

Result<BlobInfo> BlobClient::Stat(const std::string& id) {
  grpc::ClientContext context;
  Prepare(&context, 0);
  BlobId request;
  request.set_id(id);
  BlobInfo reply;
  grpc::Status status = stub_->StatBlob(&context, request, &reply);
  if (!status.ok()) return Explain(status, "looking up blob " + id);
  return reply;
}

Result<std::vector<std::string>> BlobClient::Missing(const std::vector<std::string>& ids) {
  grpc::ClientContext context;
  Prepare(&context, 0);
  BlobIds request, reply;
  for (const std::string& id : ids) request.add_ids(id);
  grpc::Status status = stub_->MissingBlobs(&context, request, &reply);
  if (!status.ok()) return Explain(status, "asking the head's store what it lacks");
  return std::vector<std::string>(reply.ids().begin(), reply.ids().end());
}

Status BlobClient::Send(const std::string& id, int64_t size, const FillFn& fill, const std::string& what,
                        const ProgressFn& progress) {
  grpc::ClientContext context;
  Prepare(&context, size);
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
  Fd file{open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (file.fd < 0) return Status::IOError(fmt::format("cannot open {}: {}", path, std::strerror(errno)));
  int64_t size = lseek(file.fd, 0, SEEK_END);
  if (size < 0) return Status::IOError(fmt::format("cannot size {}: {}", path, std::strerror(errno)));
  return UploadRange(id, path, 0, size, progress);
}

std::unique_ptr<BlobUpload> BlobClient::StartUpload(int64_t size_hint, const std::string& what) {
  return std::unique_ptr<BlobUpload>(new BlobUpload(this, size_hint, what));
}

BlobUpload::BlobUpload(BlobClient* client, int64_t size_hint, std::string what)
    : client_(client), what_(std::move(what)) {
  client_->Prepare(&context_, size_hint);
  writer_ = client_->stub_->PutBlob(&context_, &reply_);
  chunk_.set_size_hint(size_hint);
  chunk_.mutable_data()->reserve(kChunkBytes);
}

BlobUpload::~BlobUpload() {
  if (finished_) return;
  context_.TryCancel();
  writer_->Finish();
}

Status BlobUpload::Failed(const grpc::Status& status) {
  finished_ = true;
  failed_ = client_->Explain(status, fmt::format("uploading {} to the head", what_));
  if (failed_.ok()) failed_ = Status::Internal(fmt::format("uploading {}: the head ended the call early", what_));
  return failed_;
}

Status BlobUpload::Send() {
  // A refused write means the head ended the call: Finish says why.
  if (!writer_->Write(chunk_)) return Failed(writer_->Finish());
  chunk_.clear_size_hint();
  chunk_.mutable_data()->clear();  // keeps its capacity
  return Status::Ok();
}

Status BlobUpload::Write(const char* data, size_t size) {
  if (finished_) return failed_.ok() ? Status::FailedPrecondition("write after the upload finished") : failed_;
  std::string* buffer = chunk_.mutable_data();
  while (size > 0) {
    size_t n = std::min(size, static_cast<size_t>(kChunkBytes) - buffer->size());
    buffer->append(data, n);
    data += n;
    size -= n;
    written_ += static_cast<int64_t>(n);
    if (buffer->size() == static_cast<size_t>(kChunkBytes)) RETURN_IF_ERROR(Send());
  }
  return Status::Ok();
}

Status BlobUpload::Finish(const std::string& id) {
  if (finished_) return failed_.ok() ? Status::FailedPrecondition("the upload finished already") : failed_;
  chunk_.set_id(id);
  chunk_.set_size(written_);
  RETURN_IF_ERROR(Send());
  writer_->WritesDone();
  finished_ = true;
  grpc::Status status = writer_->Finish();
  if (!status.ok()) return Failed(status);
  return Status::Ok();
}

Status BlobClient::UploadRange(const std::string& id, const std::string& path, int64_t offset, int64_t length,
                               const ProgressFn& progress) {
  Fd file{open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (file.fd < 0) return Status::IOError(fmt::format("cannot open {}: {}", path, std::strerror(errno)));
  auto fill = [&](char* data, size_t n, int64_t at) {
    size_t filled = 0;
    while (filled < n) {
      ssize_t got = pread(file.fd, data + filled, n - filled, offset + at + static_cast<int64_t>(filled));
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
  Prepare(&context, size >= 0 ? size : max_bytes);
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
  if (got != id) {
    return Status::Corruption(
        fmt::format("blob {} from the head failed its hash check (its bytes hash to {})", id, got));
  }
  return Status::Ok();
}

Status BlobClient::Download(const std::string& id, const std::string& path, const ProgressFn& progress) {
  Fd file{open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600)};
  if (file.fd < 0) return Status::IOError(fmt::format("cannot create {}: {}", path, std::strerror(errno)));
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
      ssize_t n = write(file.fd, data.data() + done, data.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return Status::IOError(fmt::format("cannot write {}: {}", path, std::strerror(errno)));
      done += static_cast<size_t>(n);
    }
    return Status::Ok();
  };
  Status received = Receive(id, size->size(), size->size(), sink, progress);
  if (!received.ok()) return fail(received);
  if (fsync(file.fd) != 0) return fail(Status::IOError(fmt::format("cannot sync {}: {}", path, std::strerror(errno))));
  return Status::Ok();
}

Status BlobClient::DownloadRange(const std::string& id, int fd, int64_t offset, int64_t size, const std::string& path,
                                 const ProgressFn& progress) {
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

// GetBlob read piece by piece (BlobClient::OpenDownload). A thread of its
// own receives and hashes up to kReadAhead messages ahead of the consumer,
// so that unpacking one piece overlaps receiving the next; each piece is
// the received message's own buffer, handed over without a copy.
class BlobDownload final : public ByteSource {
 public:
  BlobDownload(BlobClient* client, std::string id, int64_t size_hint) : client_(client), id_(std::move(id)) {
    // Unknown size: the deadline of the largest package clusterctl sends.
    client_->Prepare(&context_, size_hint > 0 ? size_hint : int64_t{2} << 30);
    GetBlobRequest request;
    request.set_id(id_);
    reader_ = client_->stub_->GetBlob(&context_, request);
    thread_ = std::thread([this] { Receive(); });
  }
  ~BlobDownload() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    context_.TryCancel();  // wakes a Read
    changed_.notify_all();
    thread_.join();
  }

  Status Next(std::string_view* piece) override {
    *piece = {};
    std::unique_lock<std::mutex> lock(mutex_);
    if (!current_.empty()) free_.push_back(std::move(current_));
    current_.clear();
    changed_.wait(lock, [this] { return !ready_.empty() || ended_; });
    if (ready_.empty()) return failed_;  // OK at the end
    current_ = std::move(ready_.front());
    ready_.pop_front();
    changed_.notify_all();
    *piece = current_;
    return Status::Ok();
  }

  Status Finish() override {
    std::string_view piece;
    do {
      RETURN_IF_ERROR(Next(&piece));
    } while (!piece.empty());
    // The receiving thread is done with the counts and the hash.
    std::lock_guard<std::mutex> lock(mutex_);
    if (received_ != total_) {
      return Status::Corruption(fmt::format("blob {}: {} bytes arrived of {}", id_, received_, total_));
    }
    if (std::string got = hash_.HexDigest(); got != id_) {
      return Status::Corruption(
          fmt::format("blob {} from the head failed its hash check (its bytes hash to {})", id_, got));
    }
    return Status::Ok();
  }

 private:
  static constexpr size_t kReadAhead = 4;

  // The receiving thread: the only one to touch reader_, chunk_ and hash_
  // until it has ended.
  void Receive() {
    Status failed;
    for (;;) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!free_.empty()) {  // parse into a buffer that has the room already
          chunk_.mutable_data()->swap(free_.back());
          free_.pop_back();
        }
      }
      if (!reader_->Read(&chunk_)) break;
      if (total_ < 0) total_ = chunk_.size();  // the first message names the size
      std::string data;
      data.swap(*chunk_.mutable_data());
      if (received_ + static_cast<int64_t>(data.size()) > total_) {
        failed = Status::Corruption(fmt::format("blob {}: more than the {} bytes announced arrived", id_, total_));
        context_.TryCancel();
        break;
      }
      hash_.Update(data.data(), data.size());
      received_ += static_cast<int64_t>(data.size());
      std::unique_lock<std::mutex> lock(mutex_);
      changed_.wait(lock, [this] { return ready_.size() < kReadAhead || stop_; });
      if (stop_) break;
      if (!data.empty()) ready_.push_back(std::move(data));  // an empty blob's one message has none
      changed_.notify_all();
    }
    grpc::Status status = reader_->Finish();
    std::lock_guard<std::mutex> lock(mutex_);
    if (failed.ok() && !status.ok()) failed = client_->Explain(status, "downloading blob " + id_);
    failed_ = failed;
    ended_ = true;
    changed_.notify_all();
  }

  BlobClient* client_;
  const std::string id_;
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReader<BlobChunk>> reader_;
  BlobChunk chunk_;
  Sha256 hash_;
  int64_t received_ = 0;
  int64_t total_ = -1;

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::string> ready_;   // received, not yet handed out
  std::vector<std::string> free_;   // handed out and given back: reused
  std::string current_;             // the piece the consumer holds
  bool ended_ = false;              // the receiving thread is done
  bool stop_ = false;
  Status failed_;
  std::thread thread_;
};

std::unique_ptr<ByteSource> BlobClient::OpenDownload(const std::string& id, int64_t size_hint) {
  return std::make_unique<BlobDownload>(this, id, size_hint);
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
