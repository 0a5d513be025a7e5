// Blobs in S3-compatible object storage, laid out as the head's own store
// is: content-addressed, blob ID at PREFIX/blobs/ID (packages, pieces of
// checkpoint and output files, and the manifests naming them). Every
// machine reads and writes S3 itself with its own credentials
// (config/README.md says why), so no byte passes through the head.
//
// A blob is only ever written under its own id, and S3 checks each upload
// against the SHA-256 sent with it, which for a named blob is its id: an
// object under blobs/ is complete and correct, and a blob already there is
// never sent again. An upload named only at its end (a package while it is
// packed) goes to PREFIX/tmp/ and is copied into place server-side once its
// id is known. Downloads are hashed as they arrive and checked against the
// id. Thread-safe.
#pragma once

#include <memory>
#include <string>

#include "common/storage/blob_storage.h"
#include "common/storage/s3_client.h"
#include "common/storage/s3_config.h"

namespace clusterd {

class S3BlobStorage final : public BlobStorage {
 public:
  S3BlobStorage(S3ClientOptions options, S3Location location);

  // The bucket exists and these credentials may use it; the one-line error
  // names the bucket and endpoint otherwise (missing bucket, wrong
  // credentials, unreachable endpoint).
  Status Check();

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
  // A blob is read in ranged GETs of at least this many bytes, when a tree
  // download lends it streams (boto3 splits at 8 MiB).
  static constexpr int64_t kMinRangeBytes = int64_t{4} << 20;
  // As boto3's transfer manager: ten ranged GETs at once. Fixed at boto3's
  // default rather than a config key: every machine reads S3 with it, not
  // the head alone, and a tree download may ask for its own count
  // (TreeDownloadOptions::parallel).
  int ParallelReads() override { return kParallelReads; }
  static constexpr int kParallelReads = 10;
  // A piece is one part: sent in one PUT, found with one HEAD.
  int64_t PieceBytes() override { return client_.options().part_bytes; }

  // PREFIX/blobs/ID, and PREFIX/tmp/NAME.
  std::string KeyOf(const std::string& id) const;
  std::string TempKey(const std::string& name) const;
  S3Client& client() { return client_; }
  const S3Location& location() const { return location_; }

  // Streams blob `id` into `sink`, hashing it: Corruption unless it hashes
  // to `id` (and is `size` bytes, unless -1); ResourceExhausted past
  // `max_bytes` (-1: no limit); NotFound naming the store when absent.
  Status Stream(const std::string& id, int64_t size, int64_t max_bytes, const S3Client::SinkFn& sink,
                const ProgressFn& progress);

 private:
  // DownloadRange split into `ranges` ranged GETs, then hashed whole.
  Status DownloadInRanges(const std::string& id, int fd, int64_t offset, int64_t size, const std::string& path,
                          const ProgressFn& progress, int ranges);

  S3Client client_;
  S3Location location_;
};

}  // namespace clusterd
