#include "daemon/rpc/store_service.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include <fmt/format.h>

#include "common/net/auth.h"
#include "common/net/grpc_status.h"
#include "common/logging.h"
#include "common/thread_priority.h"
#include "daemon/head/job_data.h"
#include "daemon/rpc/call_principal.h"
#include "daemon/rpc/rpc_latency.h"

namespace clusterd {

namespace {

// Runs `task` on the store's ingest threads, which hash and write at low
// priority so that a machine's training comes first.
template <typename Task>
void PostToIngest(boost::asio::thread_pool& ingest, Task task) {
  boost::asio::post(ingest, [task = std::move(task)] {
    thread_local bool lowered = false;
    if (!lowered) LowerThisThreadsPriority(/*idle_io=*/false);  // its writes are the blob's only copy yet
    lowered = true;
    task();
  });
}

// Receives one blob, named by its first chunk (id and size) or, when the
// first has no id, by its last (store.proto); every chunk may carry bytes.
// The blob exists only once the last byte arrived and hashed right.
class PutReactor final : public grpc::ServerReadReactor<BlobChunk> {
 public:
  PutReactor(BlobStore* store, boost::asio::thread_pool* ingest, BlobInfo* reply, std::string peer)
      : store_(store), ingest_(ingest), reply_(reply), peer_(std::move(peer)) {
    StartRead(&chunk_);
  }

  void OnReadDone(bool ok) override {
    // The client finished sending (or went away: then Finish is moot).
    if (!ok) return Ingest([this] { End(Commit()); });
    if (!writer_) {
      named_first_ = !chunk_.id().empty();
      auto writer = named_first_ ? store_->Create(chunk_.id(), chunk_.size()) : store_->CreateUnnamed(chunk_.size_hint());
      if (!writer.ok()) return End(writer.status());
      writer_ = std::move(*writer);
      if (named_first_) Name();
    } else if (!id_.empty() && !named_first_) {
      return End(Status::InvalidArgument(fmt::format("bytes came after the chunk naming blob {}", id_)));
    } else if (!named_first_ && !chunk_.id().empty()) {
      Name();
    }
    // The next chunk is read only once this one is hashed and written: the
    // sender waits on the slower of the network and the ingest threads.
    Ingest([this] {
      Status appended = writer_->Append(chunk_.data());
      if (!appended.ok()) return End(appended);
      StartRead(&chunk_);
    });
  }

  void OnDone() override { delete this; }

 private:
  // Hashing and writing run on the ingest threads at nice 19, not on gRPC's
  // threads: a 500 MiB checkpoint costs the head 1-2 s of CPU, which ranks
  // training on the head's machine, and its heartbeats, come before.
  template <typename Task>
  void Ingest(Task task) {
    PostToIngest(*ingest_, std::move(task));
  }

  void Name() {
    id_ = chunk_.id();
    size_ = chunk_.size();
  }

  Status Commit() {
    if (!writer_) return Status::InvalidArgument("an upload must start with a chunk");
    if (id_.empty()) return Status::InvalidArgument("the upload ended before its last chunk named the blob");
    Status committed = named_first_ ? writer_->Commit() : writer_->Commit(id_, size_);
    if (committed.ok()) {
      reply_->set_id(id_);
      reply_->set_present(true);
      reply_->set_size(size_);
      LOG_DEBUG("store: received blob {} ({} bytes) from {}", id_, size_, peer_);
    }
    return committed;
  }

  void End(const Status& status) {
    if (!status.ok()) {
      LOG_WARN("store: refused an upload from {}: {}", peer_, status.message());
      writer_.reset();  // leaves nothing behind
    }
    Finish(ToGrpc(status));
  }

  BlobStore* store_;
  boost::asio::thread_pool* ingest_;
  BlobInfo* reply_;
  std::string peer_;
  BlobChunk chunk_;
  bool named_first_ = false;
  std::string id_;  // once named
  int64_t size_ = 0;
  std::unique_ptr<BlobStore::Writer> writer_;
};

// Sends one blob from `offset`, a chunk per message; the first names it and
// its whole size, so the receiver can check both.
class GetReactor final : public grpc::ServerWriteReactor<BlobChunk> {
 public:
  GetReactor(BlobStore* store, boost::asio::thread_pool* ingest, int fd, std::string id, int64_t size, int64_t offset)
      : store_(store), ingest_(ingest), fd_(fd), id_(std::move(id)), size_(size), offset_(offset) {
    chunk_.set_id(id_);
    chunk_.set_size(size_);
    SendNext();
  }
  ~GetReactor() override { close(fd_); }

  void OnWriteDone(bool ok) override {
    if (!ok) return Finish(grpc::Status(grpc::StatusCode::CANCELLED, "the receiver went away"));
    // Only the first message names the blob. The data buffer keeps its size,
    // so SendNext's resize zero-fills nothing that pread overwrites.
    chunk_.clear_id();
    chunk_.clear_size();
    SendNext();
  }

  void OnDone() override { delete this; }

 private:
  void SendNext() {
    if (offset_ >= size_ && sent_any_) return Finish(grpc::Status::OK);
    std::string* data = chunk_.mutable_data();
    data->resize(static_cast<size_t>(std::min<int64_t>(kBlobChunkBytes, size_ - offset_)));
    size_t filled = 0;
    while (filled < data->size()) {
      ssize_t n = pread(fd_, data->data() + filled, data->size() - filled, offset_ + static_cast<int64_t>(filled));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        // Shorter than it was stored (cut short by a crash, say): dropped, or
        // it would be served, and refused, to every request for ever.
        if (n == 0) {
          PostToIngest(*ingest_, [store = store_, id = id_] {
            auto dropped = store->DropIfCorrupt(id);
            if (!dropped.ok()) LOG_WARN("store: cannot check blob {}: {}", id, dropped.status().message());
          });
          return Finish(grpc::Status(grpc::StatusCode::DATA_LOSS,
                                     fmt::format("blob {} ended early at byte {} on the head: short file, which the "
                                                 "head drops", id_, offset_ + static_cast<int64_t>(filled))));
        }
        // A piece the disk will not give back is dropped, or it would be
        // served, and refused, to every retry that restores it.
        const std::string error = std::strerror(errno);
        store_->DropUnreadable(id_, error);
        return Finish(grpc::Status(grpc::StatusCode::NOT_FOUND,
                                   fmt::format("blob {} cannot be read on the head ({}), which drops it", id_, error)));
      }
      filled += static_cast<size_t>(n);
    }
    offset_ += static_cast<int64_t>(filled);
    sent_any_ = true;
    StartWrite(&chunk_);
  }

  BlobStore* store_;
  boost::asio::thread_pool* ingest_;
  int fd_;
  std::string id_;
  int64_t size_;
  int64_t offset_;
  bool sent_any_ = false;
  BlobChunk chunk_;
};

// Answers a call that failed before any byte moved, then goes away.
template <typename Base>
class Refused final : public Base {
 public:
  explicit Refused(const grpc::Status& status) { this->Finish(status); }
  void OnDone() override { delete this; }
};

}  // namespace

grpc::Status StoreServiceImpl::NoBytesHere() const {
  return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                      fmt::format("this head keeps no blobs: they are in {}, which each machine reads and writes itself",
                                  location_.url()));
}

grpc::Status StoreServiceImpl::CheckCaller(const grpc::CallbackServerContext& context) const {
  Principal caller;
  return ResolveCaller(context, *users_, &caller);
}

grpc::Status StoreServiceImpl::AdmitBlobCall(const grpc::CallbackServerContext& context, Principal* caller) const {
  Principal resolved;
  grpc::Status auth = ResolveCaller(context, *users_, caller ? caller : &resolved);
  if (!auth.ok()) return auth;
  return store_ ? grpc::Status::OK : NoBytesHere();
}

grpc::Status StoreServiceImpl::MayFetch(const Principal& caller, const std::string& id) const {
  if (!caller.IsNode()) return grpc::Status::OK;
  std::vector<std::string> jobs;
  for (const std::string& owner : store_->Holders(id)) jobs.push_back(JobData::JobOfOwner(owner));
  Status may = node_blobs_ ? node_blobs_->MayFetch(caller.user, id, jobs)
                           : Status::PermissionDenied(fmt::format(
                                 "node token {} may not fetch blob {}: this head gives node tokens no blobs",
                                 caller.user, id));
  return ToGrpc(may);
}

grpc::ServerUnaryReactor* StoreServiceImpl::GetStoreLocation(grpc::CallbackServerContext* context,
                                                             const StoreLocationRequest* /*request*/,
                                                             StoreLocation* reply) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  const RpcTimer timer(StoreService::service_full_name(), "GetStoreLocation");
  grpc::Status auth = CheckCaller(*context);
  if (auth.ok()) *reply = location_;
  timer.Finish(reactor, auth);
  return reactor;
}

grpc::ServerUnaryReactor* StoreServiceImpl::StatBlob(grpc::CallbackServerContext* context, const BlobId* request,
                                                     BlobInfo* reply) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  const RpcTimer timer(StoreService::service_full_name(), "StatBlob");
  Principal caller;
  const grpc::Status admitted = AdmitBlobCall(*context, &caller);
  if (!admitted.ok()) {
    timer.Finish(reactor, admitted);
    return reactor;
  }
  auto answer = [store = store_, request, reply, reactor, timer](const Status& checked) {
    reply->set_id(request->id());
    auto size = store->Size(request->id());
    reply->set_present(size.ok());
    if (size.ok()) reply->set_size(*size);
    timer.Finish(reactor, checked.ok() ? grpc::Status::OK : ToGrpc(checked));
  };
  if (!request->suspect() || !IsBlobId(request->id())) {
    answer(Status::Ok());  // an id that is no blob's is simply not present
    return reactor;
  }
  // A node got bytes that did not hash to the id: the store hashes its own
  // copy, off gRPC's threads. Only a blob the node may fetch: a node token
  // must not make the head rehash every blob it can name.
  const grpc::Status may_flag = MayFetch(caller, request->id());
  if (!may_flag.ok()) {
    timer.Finish(reactor, may_flag);
    return reactor;
  }
  LOG_WARN("store: {} received blob {} corrupt; checking the store's copy", context->peer(), request->id());
  PostToIngest(ingest_, [store = store_, id = request->id(), answer] {
    auto dropped = store->DropIfCorrupt(id);
    if (dropped.ok() && !*dropped) LOG_INFO("store: blob {} is intact here", id);
    answer(dropped.status());
  });
  return reactor;
}

grpc::ServerUnaryReactor* StoreServiceImpl::MissingBlobs(grpc::CallbackServerContext* context, const BlobIds* request,
                                                         BlobIds* reply) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  const RpcTimer timer(StoreService::service_full_name(), "MissingBlobs");
  const grpc::Status admitted = AdmitBlobCall(*context);
  if (!admitted.ok()) {
    timer.Finish(reactor, admitted);
    return reactor;
  }
  for (std::string& id : store_->Missing({request->ids().begin(), request->ids().end()})) {
    reply->add_ids(std::move(id));
  }
  timer.Finish(reactor, grpc::Status::OK);
  return reactor;
}

grpc::ServerReadReactor<BlobChunk>* StoreServiceImpl::PutBlob(grpc::CallbackServerContext* context,
                                                              BlobInfo* reply) {
  const grpc::Status admitted = AdmitBlobCall(*context);
  if (!admitted.ok()) return new Refused<grpc::ServerReadReactor<BlobChunk>>(admitted);
  return new PutReactor(store_, &ingest_, reply, context->peer());
}

grpc::ServerWriteReactor<BlobChunk>* StoreServiceImpl::GetBlob(grpc::CallbackServerContext* context,
                                                               const GetBlobRequest* request) {
  Principal caller;
  const grpc::Status admitted = AdmitBlobCall(*context, &caller);
  if (!admitted.ok()) return new Refused<grpc::ServerWriteReactor<BlobChunk>>(admitted);
  // Before the size: a refused node learns nothing of the blob.
  const grpc::Status may_fetch = MayFetch(caller, request->id());
  if (!may_fetch.ok()) return new Refused<grpc::ServerWriteReactor<BlobChunk>>(may_fetch);
  auto size = store_->Size(request->id());
  if (!size.ok()) return new Refused<grpc::ServerWriteReactor<BlobChunk>>(ToGrpc(size.status()));
  if (request->offset() < 0 || request->offset() > *size) {
    return new Refused<grpc::ServerWriteReactor<BlobChunk>>(grpc::Status(
        grpc::StatusCode::INVALID_ARGUMENT, fmt::format("offset {} is outside blob {} of {} bytes", request->offset(),
                                                        request->id(), *size)));
  }
  auto fd = store_->OpenForRead(request->id());
  if (!fd.ok()) return new Refused<grpc::ServerWriteReactor<BlobChunk>>(ToGrpc(fd.status()));
  return new GetReactor(store_, &ingest_, *fd, request->id(), *size, request->offset());
}

}  // namespace clusterd
