#include "daemon/http/package_upload.h"

#include <boost/asio/post.hpp>

#include <memory>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/logging.h"
#include "common/thread_priority.h"
#include "daemon/http/http_query.h"
#include "daemon/http/json_reply.h"

namespace clusterd {

namespace {

// Each piece is hashed and written before the next is read, so a slow disk
// slows the sender rather than filling the head's memory.
class PackageSink final : public HttpBodySink, public std::enable_shared_from_this<PackageSink> {
 public:
  PackageSink(std::unique_ptr<BlobStore::Writer> writer, std::string id, uint64_t size,
              boost::asio::thread_pool* ingest)
      : writer_(std::move(writer)), id_(std::move(id)), size_(size), ingest_(ingest) {}

  void Write(std::string piece, Next next) override {
    OnIngest([self = shared_from_this(), piece = std::move(piece), next = std::move(next)] {
      Status appended = self->writer_->Append(piece);
      if (!appended.ok()) return next(self->Refused(appended));
      next(std::nullopt);
    });
  }

  void End(std::function<void(HttpReply)> respond) override {
    OnIngest([self = shared_from_this(), respond = std::move(respond)] {
      Status committed = self->writer_->Commit();
      if (!committed.ok()) return respond(self->Refused(committed));
      LOG_INFO("dashboard: received package {} ({} bytes)", self->id_, self->size_);
      respond(JsonReply(200, {{"id", self->id_}, {"present", true}, {"size", self->size_}}));
    });
  }

 private:
  template <typename Task>
  void OnIngest(Task task) {
    boost::asio::post(*ingest_, [task = std::move(task)]() mutable {
      // Its writes are the package's only copy yet: no idle I/O class.
      thread_local bool lowered = false;
      if (!lowered) LowerThisThreadsPriority(/*idle_io=*/false);
      lowered = true;
      task();
    });
  }

  HttpReply Refused(const Status& status) {
    LOG_WARN("dashboard: refused package {}: {}", id_, status.message());
    writer_.reset();  // leaves nothing behind
    return JsonErrorOf(status);
  }

  std::unique_ptr<BlobStore::Writer> writer_;
  std::string id_;
  uint64_t size_;
  boost::asio::thread_pool* ingest_;
};

std::string IdOf(const std::string& path) { return path.substr(sizeof(PackageUploads::kPrefix) - 1); }

HttpReply NoStore() {
  return JsonError(501, "this head keeps no packages: its store is S3, which clusterctl submit uploads to directly");
}

}  // namespace

PackageUploads::~PackageUploads() {
  ingest_.stop();
  ingest_.join();
}

bool PackageUploads::IsPath(const std::string& path) { return path.rfind(kPrefix, 0) == 0; }

HttpReply PackageUploads::Stat(const std::string& path) const {
  const std::string id = IdOf(path);
  if (!IsBlobId(id)) return JsonError(400, fmt::format("'{}' is not a package id (64 lower-case hex digits)", id));
  if (!blobs_) return NoStore();
  auto size = blobs_->Size(id);
  if (!size.ok()) {
    return JsonReply(404, {{"id", id},
                           {"present", false},
                           {"max_bytes", max_bytes_},
                           {"error", "the head's store has no package " + id}});
  }
  return JsonReply(200, {{"id", id}, {"present", true}, {"size", *size}, {"max_bytes", max_bytes_}});
}

HttpStream PackageUploads::Start(const HttpRequest& request) {
  const std::string id = IdOf(TargetPath(request.target));
  if (!IsBlobId(id)) {
    return {nullptr, JsonError(400, fmt::format("'{}' is not a package id (64 lower-case hex digits)", id))};
  }
  if (!blobs_) return {nullptr, NoStore()};
  if (!request.content_length) {
    return {nullptr, JsonError(411, "a package upload needs a Content-Length (the package's size in bytes)")};
  }
  const uint64_t size = *request.content_length;
  if (size > static_cast<uint64_t>(max_bytes_)) {
    return {nullptr, JsonError(413, fmt::format("package {} is {} bytes; this head takes packages of at most {}", id,
                                                size, max_bytes_))};
  }
  auto writer = blobs_->Create(id, static_cast<int64_t>(size));
  if (writer.status().code() == Status::Code::kAlreadyExists) return {nullptr, Stat(kPrefix + id)};
  if (!writer.ok()) return {nullptr, JsonErrorOf(writer.status())};
  return {std::make_shared<PackageSink>(std::move(*writer), id, size, &ingest_), std::nullopt};
}

}  // namespace clusterd
