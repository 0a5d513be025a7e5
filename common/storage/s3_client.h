// An S3 client for radosgw, MinIO and AWS alike: the bucket and object
// verbs, each one or a few requests through S3Transport (s3_transport.h:
// signing, retries, one-line errors naming the bucket and the endpoint).
//
// Every upload sends the SHA-256 of its bytes as x-amz-content-sha256,
// which the server checks before it stores anything. Objects larger than
// `part_bytes` go up as a multipart upload, `parallel_parts` parts at once,
// each part hashed then sent from its source (never a whole file in
// memory; s3_multipart.h). Downloads stream to a sink.
//
// Errors are one line naming the bucket and the endpoint:
//   NotFound        "bucket B does not exist at E" / "s3://B/K not found at E"
//   Unauthenticated "E refused the credentials for bucket B (InvalidAccessKeyId)"
//   Unavailable     "cannot reach S3 at E (bucket B): Couldn't connect to server"
// Thread-safe: calls may run at once from many threads.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/storage/s3_config.h"
#include "common/storage/s3_transport.h"
#include "common/status.h"

namespace clusterd {


class S3Client {
 public:
  using FillFn = S3FillFn;
  using SinkFn = S3SinkFn;
  // (bytes done, bytes in all).
  using ProgressFn = std::function<void(int64_t done, int64_t total)>;

  explicit S3Client(S3ClientOptions options);

  const std::string& endpoint() const { return options_.endpoint.url; }
  const S3ClientOptions& options() const { return options_; }

  // Whether the bucket exists and these credentials may use it: the check
  // made at start and at submit, with few retries so a wrong address fails
  // within seconds.
  Status CheckBucket(const std::string& bucket);
  Status CreateBucket(const std::string& bucket);

  // The object's size; NotFound when it is absent.
  Result<int64_t> Head(const std::string& bucket, const std::string& key);
  // `size` bytes from `fill`, whose SHA-256 in hex is `sha256` ("" to have
  // it computed first, with one more pass over `fill`). Multipart above
  // part_bytes. When the object already exists it is replaced.
  Status Put(const std::string& bucket, const std::string& key, int64_t size, const FillFn& fill,
             const std::string& sha256, const ProgressFn& progress = nullptr);
  Status PutData(const std::string& bucket, const std::string& key, const std::string& data);
  // `length` bytes of the file at `path` from `offset`, read with pread.
  Status PutFile(const std::string& bucket, const std::string& key, const std::string& path, int64_t offset,
                 int64_t length, const std::string& sha256, const ProgressFn& progress = nullptr);
  // Streams the object into `sink`; `size_hint` (-1: unknown) for progress.
  Status Get(const std::string& bucket, const std::string& key, const SinkFn& sink,
             const ProgressFn& progress = nullptr);
  // `length` bytes of the object from byte `from` (a ranged GET); an answer
  // that is not that range (a server ignoring Range) is an error.
  Status GetRange(const std::string& bucket, const std::string& key, int64_t from, int64_t length,
                  const SinkFn& sink);
  Status Delete(const std::string& bucket, const std::string& key);
  // Server-side copy within the bucket (CopyObject: up to 5 GiB); no bytes
  // go through this machine.
  Status Copy(const std::string& bucket, const std::string& from_key, const std::string& to_key);
  // Keys under `prefix` (ListObjectsV2, following continuation tokens).
  Result<std::vector<std::string>> List(const std::string& bucket, const std::string& prefix);

  // One multipart upload whose bytes come as they are made (a package while
  // it is packed): parts of part_bytes are buffered in memory, at most
  // parallel_parts + 1 of them, and go up while the next fills. Destroyed
  // before Finish, it aborts the upload and the server keeps nothing.
  class Writer {
   public:
    virtual ~Writer() = default;
    virtual Status Write(const char* data, size_t size) = 0;
    // Completes the object; OK once it is stored.
    virtual Status Finish() = 0;
    virtual int64_t bytes() const = 0;
  };
  std::unique_ptr<Writer> StartWrite(const std::string& bucket, const std::string& key);

  // The single requests the verbs are made of, for the multipart uploads.
  S3Transport& transport() { return transport_; }

 private:
  S3ClientOptions options_;
  S3Transport transport_;
};

}  // namespace clusterd
