// The client side of the head's blob store, for clusterctl (uploads) and
// node agents (downloads): streams files in 1 MiB chunks, never whole in
// memory, and checks a download's SHA-256 against its id as it arrives.
#pragma once

#include <grpcpp/channel.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "store.grpc.pb.h"

namespace clusterd {

class BlobClient {
 public:
  // (bytes done, bytes in all); called after every chunk.
  using ProgressFn = std::function<void(int64_t done, int64_t total)>;

  BlobClient(const std::shared_ptr<grpc::Channel>& channel, std::string token, std::string head_address);

  // Whether the head's store holds the blob, and its size.
  Result<BlobInfo> Stat(const std::string& id);
  // Which of `ids` the head's store lacks, in order.
  Result<std::vector<std::string>> Missing(const std::vector<std::string>& ids);
  // Streams the file at `path` as blob `id`. Already there is success.
  Status Upload(const std::string& id, const std::string& path, const ProgressFn& progress = nullptr);
  // Streams blob `id` into `path` (created 0600, replaced if present). The
  // file is complete and matches its id when this returns OK; otherwise it
  // is removed, and a hash mismatch is a Corruption status naming both.
  Status Download(const std::string& id, const std::string& path, const ProgressFn& progress = nullptr);

 private:
  void Prepare(grpc::ClientContext* context, int64_t bytes) const;
  Status Explain(const grpc::Status& status, const std::string& what) const;

  std::unique_ptr<StoreService::Stub> stub_;
  std::string token_;
  std::string head_address_;
};

}  // namespace clusterd
