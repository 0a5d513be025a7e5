// gRPC face of the head's blob store: StatBlob, MissingBlobs, PutBlob (a
// client stream of chunks) and GetBlob (a server stream), each checked for
// the cluster token.
// Bytes move on gRPC's callback threads and, as they arrive, are hashed and
// written on ingest threads at nice 19; never on the head's event loop, so a
// large upload does not delay heartbeats or scheduling.
#pragma once

#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>

#include <string>

#include "daemon/store/blob_store.h"
#include "store.grpc.pb.h"

namespace clusterd {

// Bytes per streamed message: well under gRPC's 4 MiB message limit.
inline constexpr int64_t kBlobChunkBytes = 1 << 20;

class StoreServiceImpl final : public StoreService::CallbackService {
 public:
  // REQUIRES: store outlives the server. A null store with an S3
  // `location`: the head keeps no bytes, and says where they are.
  StoreServiceImpl(BlobStore* store, std::string token, StoreLocation location = {})
      : store_(store), token_(std::move(token)), location_(std::move(location)) {}

  grpc::ServerUnaryReactor* GetStoreLocation(grpc::CallbackServerContext* context, const StoreLocationRequest* request,
                                             StoreLocation* reply) override;
  grpc::ServerUnaryReactor* StatBlob(grpc::CallbackServerContext* context, const BlobId* request,
                                     BlobInfo* reply) override;
  grpc::ServerReadReactor<BlobChunk>* PutBlob(grpc::CallbackServerContext* context, BlobInfo* reply) override;
  grpc::ServerWriteReactor<BlobChunk>* GetBlob(grpc::CallbackServerContext* context,
                                               const GetBlobRequest* request) override;
  grpc::ServerUnaryReactor* MissingBlobs(grpc::CallbackServerContext* context, const BlobIds* request,
                                         BlobIds* reply) override;

 private:
  // FAILED_PRECONDITION naming the S3 location when this head keeps no bytes.
  grpc::Status NoBytesHere() const;
  // What every call that moves or lists bytes checks first: the cluster
  // token, then that this head keeps the bytes (NoBytesHere). OK when both hold.
  grpc::Status AdmitBlobCall(const grpc::CallbackServerContext& context) const;

  BlobStore* store_;
  std::string token_;
  StoreLocation location_;
  // Where uploads are hashed and written (see PutReactor). Two threads:
  // two uploads at once on a head with cores to spare. Joined in the
  // destructor, after the server (declared later) is gone.
  boost::asio::thread_pool ingest_{2};
};

}  // namespace clusterd
