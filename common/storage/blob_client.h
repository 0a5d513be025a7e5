// The client side of the head's blob store, for clusterctl (uploads) and
// node agents (downloads): streams files in 1 MiB chunks, never whole in
// memory, and checks a download's SHA-256 against its id as it arrives.
// Whole files (code packages) and pieces of files (common/storage/tree_transfer.h).
// Thread-safe: calls may run at once from several threads, each its own stream.
#pragma once

#include <grpcpp/channel.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "common/storage/blob_storage.h"
#include "common/storage/byte_source.h"
#include "common/status.h"
#include "store.grpc.pb.h"

namespace clusterd {

class BlobUpload;
class BlobDownload;

// The calls under way on one client, so that CancelAll can end them: a
// stopping node agent must not wait out a call's deadline (30 s and more)
// on a head that stopped answering without hanging up (SIGSTOP, a cable
// cut without a reset). Thread-safe.
class ActiveCalls {
 public:
  // Holds one call's place until it is destroyed (before its context).
  class Entry {
   public:
    Entry() = default;
    Entry(ActiveCalls* calls, grpc::ClientContext* context);
    Entry(Entry&& other) noexcept { *this = std::move(other); }
    Entry& operator=(Entry&& other) noexcept;
    Entry(const Entry&) = delete;
    Entry& operator=(const Entry&) = delete;
    ~Entry();

   private:
    ActiveCalls* calls_ = nullptr;
    grpc::ClientContext* context_ = nullptr;
  };

  // Cancels every call under way, and every later one as it starts.
  void CancelAll();

 private:
  std::mutex mutex_;
  std::set<grpc::ClientContext*> contexts_;
  bool cancelled_ = false;
};

class BlobClient final : public BlobStorage {
 public:
  BlobClient(const std::shared_ptr<grpc::Channel>& channel, std::string token, std::string head_address);

  // Ends the calls under way (CANCELLED) and fails every later one at once:
  // for a process that is stopping.
  void CancelAll() { calls_.CancelAll(); }
  // A call of someone else's on this client's head (its store's location),
  // cancelled with the rest. REQUIRES: the entry goes before the context.
  [[nodiscard]] ActiveCalls::Entry Track(grpc::ClientContext* context) { return {&calls_, context}; }

  // Whether the head's store holds the blob, and its size.
  Result<BlobInfo> Stat(const std::string& id) override;
  // Which of `ids` the head's store lacks, in order.
  Result<std::vector<std::string>> Missing(const std::vector<std::string>& ids) override;
  // Streams the file at `path` as blob `id`. Already there is success.
  Status Upload(const std::string& id, const std::string& path, const ProgressFn& progress = nullptr) override;
  // Starts an upload of bytes made as it goes, named at its end (a package
  // while it is packed): about `size_hint` bytes (0: unknown; it sets the
  // deadline, and the head refuses at once a hint larger than its store can
  // ever hold; room is taken only as the bytes arrive). `what` names the
  // source in errors.
  std::unique_ptr<BlobWriter> StartUpload(int64_t size_hint, const std::string& what) override;
  // Blob `id` as it arrives, to be consumed on the way (a package unpacked
  // while it downloads): a thread of the source's own receives and hashes a
  // few MiB ahead of the consumer. ByteSource::Finish checks size and hash,
  // a mismatch being Corruption naming both ids. `size_hint` (0: unknown)
  // sets the call's deadline. The source is used by one thread at a time.
  std::unique_ptr<ByteSource> OpenDownload(const std::string& id, int64_t size_hint) override;
  // Streams blob `id` into `path` (created 0600, replaced if present). The
  // file is complete and matches its id when this returns OK; otherwise it
  // is removed, and a hash mismatch is a Corruption status naming both.
  Status Download(const std::string& id, const std::string& path, const ProgressFn& progress = nullptr) override;

  // Streams `length` bytes of the file at `path` from `offset` as blob `id`
  // (a piece of a larger file), read with pread. Already there is success.
  // A file that ends early is an IOError saying it changed.
  Status UploadRange(const std::string& id, const std::string& path, int64_t offset, int64_t length,
                     const ProgressFn& progress = nullptr) override;
  // Sends `data` as blob `id` (a manifest). Already there is success.
  Status UploadData(const std::string& id, const std::string& data) override;
  // Blob `id` whole, in memory, checked against its id: Corruption when it
  // is not, ResourceExhausted past `max_bytes`, NotFound when not stored.
  Result<std::string> Fetch(const std::string& id, int64_t max_bytes) override;
  // Writes blob `id`, which must be `size` bytes, into `fd` at `offset` with
  // pwrite, checking its hash as it arrives. `path` names the file in
  // errors. On error some bytes may have been written: the caller discards
  // the file.
  Status DownloadRange(const std::string& id, int fd, int64_t offset, int64_t size, const std::string& path,
                       const ProgressFn& progress = nullptr, int streams = 1) override;

  const std::string& head_address() const { return head_address_; }
  std::string where() const override { return "the head at " + head_address_; }

 private:
  friend class BlobUpload;
  friend class BlobDownload;
  static constexpr int64_t kChunkBytes = 1 << 20;  // bytes per message sent

  // Puts the next bytes at offset `at` of the blob into [data, data + n).
  using FillFn = std::function<Status(char* data, size_t n, int64_t at)>;
  // Takes received bytes at offset `at` of the blob.
  using SinkFn = std::function<Status(const std::string& data, int64_t at)>;

  // Token and deadline; the entry keeps the call cancellable until it goes.
  [[nodiscard]] ActiveCalls::Entry Prepare(grpc::ClientContext* context, int64_t bytes);
  Status Explain(const grpc::Status& status, const std::string& what) const;
  // One PutBlob stream of `size` bytes; `what` names the source in errors.
  Status Send(const std::string& id, int64_t size, const FillFn& fill, const std::string& what,
              const ProgressFn& progress);
  // One GetBlob stream, checked against `id` and, unless -1, `size`.
  Status Receive(const std::string& id, int64_t size, int64_t max_bytes, const SinkFn& sink,
                 const ProgressFn& progress);

  // A download of `id` hashed to `got`: asks the head to check its own copy
  // (which it drops if it is bad) and says what it found, as the error.
  Status HashMismatch(const std::string& id, const std::string& got, int64_t size);

  std::unique_ptr<StoreService::Stub> stub_;
  std::string token_;
  std::string head_address_;
  ActiveCalls calls_;
};

// One PutBlob call whose bytes come as they are made and whose id comes
// last (BlobClient::StartUpload): 1 MiB messages go out as they fill, and
// the head hashes them as they arrive. Not thread-safe. Destroyed before a
// Finish, it cancels the call, and the head keeps nothing.
class BlobUpload final : public BlobWriter {
 public:
  ~BlobUpload() override;
  BlobUpload(const BlobUpload&) = delete;
  BlobUpload& operator=(const BlobUpload&) = delete;

  // Sends the next `size` bytes (buffered up to a message). After an error
  // (the head refused or went away), every call returns that error.
  Status Write(const char* data, size_t size) override;
  // Sends the rest with the blob's id and size (the bytes written), then
  // waits for the head: OK once its store holds the blob (or held it
  // already); Corruption (DATA_LOSS) when the bytes it got hash otherwise.
  Status Finish(const std::string& id) override;
  int64_t bytes() const override { return written_; }

 private:
  friend class BlobClient;
  BlobUpload(BlobClient* client, int64_t size_hint, std::string what);
  Status Send();  // chunk_ as one message
  Status Failed(const grpc::Status& status);

  BlobClient* client_;
  std::string what_;
  grpc::ClientContext context_;
  ActiveCalls::Entry call_;  // after context_: goes before it
  BlobInfo reply_;
  std::unique_ptr<grpc::ClientWriter<BlobChunk>> writer_;
  BlobChunk chunk_;
  int64_t written_ = 0;
  Status failed_;
  bool finished_ = false;
};

}  // namespace clusterd
