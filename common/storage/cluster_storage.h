// The cluster's blob storage as the head says it is (StoreService.
// GetStoreLocation): the head's own store over gRPC, or S3, which this
// machine then reads and writes itself, with its own credentials
// (AWS_ACCESS_KEY_ID..., ~/.aws/credentials) and the head's endpoint (else
// its own AWS_ENDPOINT_URL). Asked lazily, at the first call, and again
// after a failed ask: a node agent starts before its head may answer.
// A job's own S3 location (checkpoint.storage, outputs_storage) is reached
// the same way: this machine's credentials, the head's endpoint. Thread-safe.
#pragma once

#include <grpcpp/channel.h>

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "common/storage/blob_client.h"
#include "common/storage/blob_storage.h"

namespace clusterd {

class ClusterStorage final : public BlobStorage {
 public:
  // Where the store's location is asked: the head the caller follows now
  // (a node agent given several heads asks the leader its link found).
  using LocationChannelFn = std::function<std::shared_ptr<grpc::Channel>()>;
  // `location_channel` null: the location is asked over `channel`.
  ClusterStorage(const std::shared_ptr<grpc::Channel>& channel, std::string token, std::string head_address,
                 LocationChannelFn location_channel = nullptr);

  // The storage every call goes to; an error when the head cannot be asked
  // or S3 cannot be used (no credentials, a missing bucket, ...).
  Result<BlobStorage*> Resolve();
  // The storage at `location`: "" is the cluster's (Resolve); an
  // s3://BUCKET/PREFIX location is opened at its first use, and checked
  // then (bucket, credentials), so that an error names it.
  Result<BlobStorage*> At(const std::string& location);
  // Ends the calls under way to the head's store, and fails later ones at
  // once (BlobClient::CancelAll): for a stopping node agent. Transfers with
  // S3 are left to their own timeouts.
  void CancelTransfers() { head_.CancelAll(); }

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
                       const ProgressFn& progress = nullptr, int streams = 1) override;
  std::string where() const override;
  int ParallelReads() override;
  int64_t PieceBytes() override;

 private:
  std::shared_ptr<grpc::Channel> channel_;
  LocationChannelFn location_channel_;
  std::string token_;
  BlobClient head_;
  mutable std::mutex mutex_;
  BlobStorage* resolved_ = nullptr;  // head_ or s3_, once known
  StoreLocation location_;           // as the head said, once resolved_
  std::unique_ptr<BlobStorage> s3_;
  std::map<std::string, std::unique_ptr<BlobStorage>> own_;  // jobs' own locations, opened
};

// The S3 storage a location names, for this machine: its credentials, the
// location's endpoint or AWS_ENDPOINT_URL, checked (bucket and credentials)
// unless `check` is false.
Result<std::unique_ptr<BlobStorage>> OpenS3Storage(const std::string& url, const std::string& endpoint,
                                                   int64_t part_bytes, bool check);

}  // namespace clusterd
