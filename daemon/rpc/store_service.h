// gRPC face of the head's blob store: StatBlob, MissingBlobs, PutBlob (a
// client stream of chunks) and GetBlob (a server stream), each checked for
// a token the head's users know: nodes fetch packages and checkpoints and
// upload checkpoints and outputs with their node token; users upload
// packages and fetch results with theirs. A blob's id is the SHA-256 of its
// bytes: a user learns the ids of another's outputs from no reply (the
// head hides them from all but the owner and admins, shown_records.h).
// A node token fetches only the blobs of the jobs running on its nodes
// (identity/node_blob_access.h): a worker taken over reads no other job's
// bytes, whatever ids it learns, and flags as corrupt (StatBlob's suspect,
// which makes the head hash its copy again) only those same blobs.
// Bytes move on gRPC's callback threads and, as they arrive, are hashed and
// written on ingest threads at nice 19; never on the head's event loop, so a
// large upload does not delay heartbeats or scheduling.
#pragma once

#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>

#include <memory>
#include <string>

#include "daemon/head/identity/node_blob_access.h"
#include "daemon/head/identity/user_registry.h"
#include "daemon/store/blob_store.h"
#include "store.grpc.pb.h"

namespace clusterd {

// Bytes per streamed message: well under gRPC's 4 MiB message limit.
inline constexpr int64_t kBlobChunkBytes = 1 << 20;

class StoreServiceImpl final : public StoreService::CallbackService {
 public:
  // REQUIRES: store outlives the server. A null store with an S3
  // `location`: the head keeps no bytes, and says where they are.
  // Tokens resolved by `users`, which outlives the service.
  // `node_blobs` says what each node token may fetch; null: nothing (the
  // cluster's and users' tokens fetch any blob either way).
  StoreServiceImpl(BlobStore* store, const UserRegistry* users, StoreLocation location = {},
                   const NodeBlobAccess* node_blobs = nullptr)
      : store_(store), users_(users), node_blobs_(node_blobs), location_(std::move(location)) {}
  // Only the admin's `token` (tests, tools).
  StoreServiceImpl(BlobStore* store, const std::string& token, StoreLocation location = {})
      : own_users_(UserRegistry::AdminOnly(token)), store_(store), users_(own_users_.get()),
        location_(std::move(location)) {}

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
  // A token the head's users know (a user's or a node's).
  grpc::Status CheckCaller(const grpc::CallbackServerContext& context) const;
  // What every call that moves or lists bytes checks first: the caller,
  // then that this head keeps the bytes (NoBytesHere). OK when both hold.
  grpc::Status AdmitBlobCall(const grpc::CallbackServerContext& context, Principal* caller = nullptr) const;
  // OK unless `caller` is a node token whose nodes run no job that holds
  // blob `id` (PERMISSION_DENIED naming the rule).
  grpc::Status MayFetch(const Principal& caller, const std::string& id) const;

  std::unique_ptr<UserRegistry> own_users_;
  BlobStore* store_;
  const UserRegistry* users_;
  const NodeBlobAccess* node_blobs_ = nullptr;
  StoreLocation location_;
  // Where uploads are hashed and written (see PutReactor). Two threads:
  // two uploads at once on a head with cores to spare. Joined in the
  // destructor, after the server (declared later) is gone.
  boost::asio::thread_pool ingest_{2};
};

}  // namespace clusterd
