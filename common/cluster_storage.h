// The cluster's blob storage as the head says it is (StoreService.
// GetStoreLocation): the head's own store over gRPC, or S3, which this
// machine then reads and writes itself, with its own credentials
// (AWS_ACCESS_KEY_ID..., ~/.aws/credentials) and the head's endpoint (else
// its own AWS_ENDPOINT_URL). Asked lazily, at the first call, and again
// after a failed ask: a node agent starts before its head may answer.
// Thread-safe.
#pragma once

#include <grpcpp/channel.h>

#include <memory>
#include <mutex>
#include <string>

#include "common/blob_client.h"
#include "common/blob_storage.h"

namespace clusterd {

class ClusterStorage final : public BlobStorage {
 public:
  ClusterStorage(const std::shared_ptr<grpc::Channel>& channel, std::string token, std::string head_address);

  // The storage every call goes to; an error when the head cannot be asked
  // or S3 cannot be used (no credentials, a missing bucket, ...).
  Result<BlobStorage*> Resolve();

  Result<BlobInfo> Stat(const std::string& id) override;
  Result<std::vector<std::string>> Missing(const std::vector<std::string>& ids) override;
  Status Upload(const std::string& id, const std::string& path, const ProgressFn& progress = nullptr) override;
  Status UploadRange(const std::string& id, const std::string& path, int64_t offset, int64_t length,
                     const ProgressFn& progress = nullptr) override;
  Status UploadData(const std::string& id, const std::string& data) override;
  std::unique_ptr<BlobWriter> StartUpload(int64_t size_hint, const std::string& what) override;
  std::unique_ptr<ByteSource> OpenDownload(const std::string& id, int64_t size_hint) override;
  Status Download(const std::string& id, const std::string& path, const ProgressFn& progress = nullptr) override;
  Result<std::string> Fetch(const std::string& id, int64_t max_bytes) override;
  Status DownloadRange(const std::string& id, int fd, int64_t offset, int64_t size, const std::string& path,
                       const ProgressFn& progress = nullptr) override;
  std::string where() const override;
  int ParallelReads() override;

 private:
  std::shared_ptr<grpc::Channel> channel_;
  std::string token_;
  BlobClient head_;
  mutable std::mutex mutex_;
  BlobStorage* resolved_ = nullptr;  // head_ or s3_, once known
  std::unique_ptr<BlobStorage> s3_;
};

// The S3 storage a location names, for this machine: its credentials, the
// location's endpoint or AWS_ENDPOINT_URL, checked (bucket and credentials)
// unless `check` is false.
Result<std::unique_ptr<BlobStorage>> OpenS3Storage(const std::string& url, const std::string& endpoint,
                                                   int64_t part_bytes, bool check);

}  // namespace clusterd
