// The streaming halves of BlobClient (common/storage/blob_client.h): BlobUpload,
// whose blob is named at its end, and the ByteSource of OpenDownload.
#include <thread>

#include <fmt/format.h>

#include "common/storage/blob_client.h"
#include "common/prefetch_queue.h"
#include "common/sha256.h"

namespace clusterd {

std::unique_ptr<BlobWriter> BlobClient::StartUpload(int64_t size_hint, const std::string& what) {
  return std::unique_ptr<BlobUpload>(new BlobUpload(this, size_hint, what));
}

BlobUpload::BlobUpload(BlobClient* client, int64_t size_hint, std::string what)
    : client_(client), what_(std::move(what)) {
  call_ = client_->Prepare(&context_, size_hint);
  writer_ = client_->stub_->PutBlob(&context_, &reply_);
  chunk_.set_size_hint(size_hint);
  chunk_.mutable_data()->reserve(BlobClient::kChunkBytes);
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
    size_t n = std::min(size, static_cast<size_t>(BlobClient::kChunkBytes) - buffer->size());
    buffer->append(data, n);
    data += n;
    size -= n;
    written_ += static_cast<int64_t>(n);
    if (buffer->size() == static_cast<size_t>(BlobClient::kChunkBytes)) RETURN_IF_ERROR(Send());
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

// GetBlob read piece by piece (BlobClient::OpenDownload). A thread of its
// own receives and hashes up to kReadAhead messages ahead of the consumer
// (PrefetchQueue), so that unpacking one piece overlaps receiving the next;
// each piece is the received message's own buffer, handed over without a copy.
class BlobDownload final : public ByteSource {
 public:
  BlobDownload(BlobClient* client, std::string id, int64_t size_hint) : client_(client), id_(std::move(id)) {
    // Unknown size: the deadline of the largest package clusterctl sends.
    call_ = client_->Prepare(&context_, size_hint > 0 ? size_hint : int64_t{2} << 30);
    GetBlobRequest request;
    request.set_id(id_);
    reader_ = client_->stub_->GetBlob(&context_, request);
    thread_ = std::thread([this] { Receive(); });
  }
  ~BlobDownload() override {
    pieces_.Stop();
    context_.TryCancel();  // wakes a Read
    thread_.join();
  }

  Status Next(std::string_view* piece) override { return pieces_.Next(piece); }

  Status Finish() override {
    // Once drained, the receiving thread is done with the counts and the hash.
    RETURN_IF_ERROR(pieces_.Drain());
    if (received_ != total_) {
      return Status::Corruption(fmt::format("blob {}: {} bytes arrived of {}", id_, received_, total_));
    }
    const std::string got = hash_.HexDigest();
    return got == id_ ? Status::Ok() : client_->HashMismatch(id_, got, total_);
  }

 private:
  static constexpr size_t kReadAhead = 4;

  // The receiving thread: the only one to touch reader_, chunk_ and hash_
  // until it has ended.
  void Receive() {
    Status failed;
    for (;;) {
      // Parse into a buffer that has the room already.
      if (auto reused = pieces_.TakeFree()) chunk_.mutable_data()->swap(*reused);
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
      if (!pieces_.Push(std::move(data))) break;  // an empty blob's one message queues nothing
    }
    grpc::Status status = reader_->Finish();
    if (failed.ok() && !status.ok()) failed = client_->Explain(status, "downloading blob " + id_);
    pieces_.End(failed);
  }

  BlobClient* client_;
  const std::string id_;
  grpc::ClientContext context_;
  ActiveCalls::Entry call_;  // after context_: goes before it
  std::unique_ptr<grpc::ClientReader<BlobChunk>> reader_;
  BlobChunk chunk_;
  Sha256 hash_;
  int64_t received_ = 0;
  int64_t total_ = -1;
  PrefetchQueue pieces_{kReadAhead};
  std::thread thread_;
};

std::unique_ptr<ByteSource> BlobClient::OpenDownload(const std::string& id, int64_t size_hint) {
  return std::make_unique<BlobDownload>(this, id, size_hint);
}

}  // namespace clusterd
