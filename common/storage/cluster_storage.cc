#include "common/storage/cluster_storage.h"

#include <fmt/format.h>

#include "common/net/auth.h"
#include "common/net/grpc_status.h"
#include "common/storage/s3_blob_storage.h"

namespace clusterd {

namespace {

// What StartUpload and OpenDownload give when the storage is unknown.
class FailedWriter final : public BlobWriter {
 public:
  explicit FailedWriter(Status why) : why_(std::move(why)) {}
  Status Write(const char*, size_t) override { return why_; }
  Status Finish(const std::string&) override { return why_; }
  int64_t bytes() const override { return 0; }

 private:
  Status why_;
};

class FailedSource final : public ByteSource {
 public:
  explicit FailedSource(Status why) : why_(std::move(why)) {}
  Status Next(std::string_view* piece) override {
    *piece = {};
    return why_;
  }
  Status Finish() override { return why_; }

 private:
  Status why_;
};

}  // namespace

Result<std::unique_ptr<BlobStorage>> OpenS3Storage(const std::string& url, const std::string& endpoint,
                                                   int64_t part_bytes, bool check) {
  ASSIGN_OR_RETURN(S3Location location, ParseS3Location(url));
  ASSIGN_OR_RETURN(S3ClientOptions options, S3ClientOptionsFor(url, endpoint));
  if (part_bytes > 0) options.part_bytes = part_bytes;
  auto storage = std::make_unique<S3BlobStorage>(options, location);
  if (check) RETURN_IF_ERROR(storage->Check());
  return std::unique_ptr<BlobStorage>(std::move(storage));
}

ClusterStorage::ClusterStorage(const std::shared_ptr<grpc::Channel>& channel, std::string token,
                               std::string head_address, LocationChannelFn location_channel)
    : channel_(channel),
      location_channel_(std::move(location_channel)),
      token_(token),
      head_(channel, token, head_address) {}

int ClusterStorage::ParallelReads() {
  Result<BlobStorage*> store = Resolve();
  return store.ok() ? (*store)->ParallelReads() : BlobStorage::ParallelReads();
}

int64_t ClusterStorage::PieceBytes() {
  Result<BlobStorage*> store = Resolve();
  return store.ok() ? (*store)->PieceBytes() : BlobStorage::PieceBytes();
}

Result<BlobStorage*> ClusterStorage::Resolve() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (resolved_) return resolved_;
  auto stub = StoreService::NewStub(location_channel_ ? location_channel_() : channel_);
  grpc::ClientContext context;
  AttachToken(&context, token_);
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  ActiveCalls::Entry call = head_.Track(&context);
  StoreLocation location;
  grpc::Status status = stub->GetStoreLocation(&context, StoreLocationRequest(), &location);
  if (!status.ok()) {
    Status ours = FromGrpc(status);
    if (status.error_code() == grpc::StatusCode::UNAVAILABLE) {
      ours = Status::Unavailable(fmt::format("cannot reach {}: {}", head_.where(), status.error_message()));
    }
    return ours.WithContext("asking where the cluster's blobs live");
  }
  location_ = location;
  if (location.url().empty()) {
    resolved_ = &head_;
    return resolved_;
  }
  ASSIGN_OR_RETURN(s3_, OpenS3Storage(location.url(), location.s3_endpoint(), location.s3_part_bytes(),
                                      /*check=*/true));
  resolved_ = s3_.get();
  return resolved_;
}

Result<BlobStorage*> ClusterStorage::At(const std::string& location) {
  ASSIGN_OR_RETURN(BlobStorage * cluster, Resolve());  // and the head's endpoint
  if (location.empty()) return cluster;
  StoreLocation head_said;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = own_.find(location);
    if (it != own_.end()) return it->second.get();
    head_said = location_;
  }
  // Opened and checked outside the lock: an unreachable endpoint takes
  // seconds, and the cluster's storage must not wait on it.
  ASSIGN_OR_RETURN(std::unique_ptr<BlobStorage> opened,
                   OpenS3Storage(location, head_said.s3_endpoint(), head_said.s3_part_bytes(), /*check=*/true));
  std::lock_guard<std::mutex> lock(mutex_);
  auto& slot = own_[location];
  if (!slot) slot = std::move(opened);  // else another thread opened it meanwhile
  return slot.get();
}

std::string ClusterStorage::where() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return resolved_ ? resolved_->where() : head_.where();
}

Result<BlobInfo> ClusterStorage::Stat(const std::string& id) {
  ASSIGN_OR_RETURN(BlobStorage * storage, Resolve());
  return storage->Stat(id);
}

Result<std::vector<std::string>> ClusterStorage::Missing(const std::vector<std::string>& ids) {
  ASSIGN_OR_RETURN(BlobStorage * storage, Resolve());
  return storage->Missing(ids);
}

Status ClusterStorage::Upload(const std::string& id, const std::string& path, const ProgressFn& progress) {
  ASSIGN_OR_RETURN(BlobStorage * storage, Resolve());
  return storage->Upload(id, path, progress);
}

Status ClusterStorage::UploadRange(const std::string& id, const std::string& path, int64_t offset, int64_t length,
                                   const ProgressFn& progress) {
  ASSIGN_OR_RETURN(BlobStorage * storage, Resolve());
  return storage->UploadRange(id, path, offset, length, progress);
}

Status ClusterStorage::UploadData(const std::string& id, const std::string& data) {
  ASSIGN_OR_RETURN(BlobStorage * storage, Resolve());
  return storage->UploadData(id, data);
}

std::unique_ptr<BlobWriter> ClusterStorage::StartUpload(int64_t size_hint, const std::string& what) {
  auto storage = Resolve();
  if (!storage.ok()) return std::make_unique<FailedWriter>(storage.status());
  return (*storage)->StartUpload(size_hint, what);
}

std::unique_ptr<ByteSource> ClusterStorage::OpenDownload(const std::string& id, int64_t size_hint) {
  auto storage = Resolve();
  if (!storage.ok()) return std::make_unique<FailedSource>(storage.status());
  return (*storage)->OpenDownload(id, size_hint);
}

Status ClusterStorage::Download(const std::string& id, const std::string& path, const ProgressFn& progress) {
  ASSIGN_OR_RETURN(BlobStorage * storage, Resolve());
  return storage->Download(id, path, progress);
}

Result<std::string> ClusterStorage::Fetch(const std::string& id, int64_t max_bytes) {
  ASSIGN_OR_RETURN(BlobStorage * storage, Resolve());
  return storage->Fetch(id, max_bytes);
}

Status ClusterStorage::DownloadRange(const std::string& id, int fd, int64_t offset, int64_t size,
                                     const std::string& path, const ProgressFn& progress, int streams) {
  ASSIGN_OR_RETURN(BlobStorage * storage, Resolve());
  return storage->DownloadRange(id, fd, offset, size, path, progress, streams);
}

}  // namespace clusterd
