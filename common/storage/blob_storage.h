// Where blobs live, seen from a client (clusterctl, a node agent): the
// head's own store over gRPC (BlobClient) or S3-compatible object storage
// (S3BlobStorage), both content-addressed (a blob's id is the SHA-256 of its
// bytes, in hex), both streaming and checking every blob against its id.
// Tree transfers (common/storage/tree_transfer.h), the agent's package cache and
// clusterctl's packing speak only this interface, so with S3 the bytes go
// straight between each machine and S3, never through the head.
// Thread-safe: calls may run at once from several threads.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/storage/byte_source.h"
#include "common/status.h"
#include "store.pb.h"

namespace clusterd {

// An upload whose bytes come as they are made and whose id comes last (a
// package while it is packed). Not thread-safe. Destroyed before a Finish,
// it leaves nothing stored.
class BlobWriter {
 public:
  virtual ~BlobWriter() = default;
  // After an error, every call returns that error.
  virtual Status Write(const char* data, size_t size) = 0;
  // OK once the store holds blob `id` (or held it already); Corruption when
  // the bytes written hash otherwise.
  virtual Status Finish(const std::string& id) = 0;
  virtual int64_t bytes() const = 0;
};

class BlobStorage {
 public:
  // (bytes done, bytes in all); called after every chunk.
  using ProgressFn = std::function<void(int64_t done, int64_t total)>;

  virtual ~BlobStorage() = default;

  // Whether the store holds the blob, and its size.
  virtual Result<BlobInfo> Stat(const std::string& id) = 0;
  // Which of `ids` the store lacks, in order.
  virtual Result<std::vector<std::string>> Missing(const std::vector<std::string>& ids) = 0;
  // The file at `path` as blob `id`. Already there is success.
  virtual Status Upload(const std::string& id, const std::string& path, const ProgressFn& progress = nullptr) = 0;
  // `length` bytes of the file at `path` from `offset` as blob `id`.
  virtual Status UploadRange(const std::string& id, const std::string& path, int64_t offset, int64_t length,
                             const ProgressFn& progress = nullptr) = 0;
  // `data` as blob `id` (a manifest). Already there is success.
  virtual Status UploadData(const std::string& id, const std::string& data) = 0;
  // About `size_hint` bytes (0: unknown); `what` names the source in errors.
  virtual std::unique_ptr<BlobWriter> StartUpload(int64_t size_hint, const std::string& what) = 0;
  // Blob `id` as it arrives; ByteSource::Finish checks size and hash.
  virtual std::unique_ptr<ByteSource> OpenDownload(const std::string& id, int64_t size_hint) = 0;
  // Blob `id` into `path` (created 0600, replaced); removed on error.
  virtual Status Download(const std::string& id, const std::string& path, const ProgressFn& progress = nullptr) = 0;
  // Blob `id` whole, in memory, checked: ResourceExhausted past `max_bytes`.
  virtual Result<std::string> Fetch(const std::string& id, int64_t max_bytes) = 0;
  // Blob `id` of `size` bytes into `fd` at `offset` (pwrite), checked.
  // `streams`: how many ranged reads of this one blob may run at once (a
  // tree of fewer pieces than ParallelReads lends it the rest); a store
  // without ranged reads takes one. With more than one, `fd` must also be
  // readable: the blob is hashed from what was written.
  virtual Status DownloadRange(const std::string& id, int fd, int64_t offset, int64_t size, const std::string& path,
                               const ProgressFn& progress = nullptr, int streams = 1) = 0;

  // Names the store in messages: "the head at HOST:PORT", "s3://B/P at URL".
  virtual std::string where() const = 0;
  // How many pieces a tree download fetches at once when its caller does
  // not say: a few gRPC streams fill the head's link, S3 serves ranged GETs
  // best many at a time (boto3 uses 10).
  virtual int ParallelReads() { return 2; }
  // The piece size a tree upload cuts files into when its caller does not
  // say: 4 MiB for the head's store; S3 asks one HEAD per piece to learn
  // what it lacks, so there a piece is a whole multipart part (16 MiB by
  // default), a quarter of the requests for an unchanged file.
  virtual int64_t PieceBytes() { return int64_t{4} << 20; }
};

}  // namespace clusterd
