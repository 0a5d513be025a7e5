// S3 multipart uploads: parts of a known-size source go up in parallel
// (S3Client::Put above part_bytes), and the streaming writer sends parts as
// they fill. A failed upload is aborted, so the server keeps no parts.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <future>
#include <memory>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "common/storage/s3_multipart.h"
#include "common/storage/s3_xml.h"
#include "common/sha256.h"

namespace clusterd {

namespace {

std::string UploadQuery(const std::string& upload_id) { return "uploadId=" + S3UriEncode(upload_id, false); }

Result<std::string> CreateUpload(S3Client& client, const std::string& bucket, const std::string& key) {
  S3Response response;
  RETURN_IF_ERROR(client.transport().Call(S3Request{"POST", bucket, key, "uploads="}, &response));
  auto answer = S3XmlAnswer::Parse(response.body);
  if (!answer.ok()) {
    return answer.status().WithContext(
        fmt::format("starting a multipart upload of s3://{}/{} at {}", bucket, key, client.endpoint()));
  }
  std::string id = answer->Value("UploadId");
  if (id.empty()) {
    return Status::IOError(fmt::format("S3 at {} started no multipart upload for s3://{}/{}", client.endpoint(),
                                       bucket, key));
  }
  return id;
}

// Part `number` (from 1): `size` bytes from `fill`, hashed first. Its ETag.
Result<std::string> UploadPart(S3Client& client, const std::string& bucket, const std::string& key,
                               const std::string& upload_id, int number, int64_t size, const S3Client::FillFn& fill) {
  S3Request request{"PUT", bucket, key,
                            fmt::format("partNumber={}&{}", number, UploadQuery(upload_id))};
  ASSIGN_OR_RETURN(request.sha256, Sha256OfFill(fill, size));
  request.body_size = size;
  request.fill = fill;
  S3Response response;
  RETURN_IF_ERROR(client.transport().Call(request, &response));
  if (response.etag.empty()) {
    return Status::IOError(fmt::format("S3 at {} gave no ETag for part {} of s3://{}/{}", client.endpoint(), number,
                                       bucket, key));
  }
  return response.etag;
}

Status CompleteUpload(S3Client& client, const std::string& bucket, const std::string& key,
                      const std::string& upload_id, const std::vector<std::string>& etags) {
  std::string xml = "<CompleteMultipartUpload>";
  for (size_t i = 0; i < etags.size(); ++i) {
    xml += fmt::format("<Part><PartNumber>{}</PartNumber><ETag>{}</ETag></Part>", i + 1, XmlEscape(etags[i]));
  }
  xml += "</CompleteMultipartUpload>";
  S3Request request{"POST", bucket, key, UploadQuery(upload_id)};
  request.body_size = static_cast<int64_t>(xml.size());
  request.fill = [&](char* out, size_t n, int64_t at) {
    std::memcpy(out, xml.data() + at, n);
    return Status::Ok();
  };
  request.sha256 = Sha256Hex(xml);
  S3Response response;
  RETURN_IF_ERROR(client.transport().Call(request, &response));
  // S3 may answer 200 and still fail: the error is then in the body.
  return client.transport().ErrorInBody(request, response).WithContext("completing the upload");
}

void AbortUpload(S3Client& client, const std::string& bucket, const std::string& key, const std::string& upload_id) {
  S3Response response;
  client.transport().Call(S3Request{"DELETE", bucket, key, UploadQuery(upload_id)}, &response, true, 2);
}

}  // namespace

Status S3PutMultipart(S3Client& client, const std::string& bucket, const std::string& key, int64_t size,
                      const S3Client::FillFn& fill, const S3Client::ProgressFn& progress) {
  ASSIGN_OR_RETURN(std::string upload_id, CreateUpload(client, bucket, key));
  const int64_t part = client.options().part_bytes;
  const int parts = static_cast<int>((size + part - 1) / part);
  std::vector<std::string> etags(static_cast<size_t>(parts));
  std::atomic<int> next{0};
  std::atomic<int64_t> done{0};
  std::mutex mutex;
  Status failed;
  auto work = [&] {
    while (true) {
      int index = next++;
      if (index >= parts) return;
      {
        std::lock_guard<std::mutex> lock(mutex);
        if (!failed.ok()) return;
      }
      int64_t offset = index * part;
      int64_t length = std::min(part, size - offset);
      auto piece = [&, offset](char* data, size_t n, int64_t at) { return fill(data, n, offset + at); };
      auto etag = UploadPart(client, bucket, key, upload_id, index + 1, length, piece);
      std::lock_guard<std::mutex> lock(mutex);
      if (!etag.ok()) {
        if (failed.ok()) failed = etag.status();
        return;
      }
      etags[static_cast<size_t>(index)] = *etag;
      done += length;
      if (progress) progress(done, size);
    }
  };
  std::vector<std::thread> threads;
  for (int i = 0; i < std::min(client.options().parallel_parts, parts); ++i) threads.emplace_back(work);
  for (auto& thread : threads) thread.join();
  if (failed.ok()) failed = CompleteUpload(client, bucket, key, upload_id, etags);
  if (!failed.ok()) AbortUpload(client, bucket, key, upload_id);
  return failed;
}

namespace {

// Parts go up on threads of their own while the caller fills the next one.
class StreamingWriter final : public S3Client::Writer {
 public:
  StreamingWriter(S3Client* client, std::string bucket, std::string key)
      : client_(client), bucket_(std::move(bucket)), key_(std::move(key)) {}

  ~StreamingWriter() override {
    for (auto& part : in_flight_) part.wait();
    if (!upload_id_.empty() && !finished_) AbortUpload(*client_, bucket_, key_, upload_id_);
  }

  Status Write(const char* data, size_t size) override {
    RETURN_IF_ERROR(failed_);
    const size_t part = static_cast<size_t>(client_->options().part_bytes);
    while (size > 0) {
      size_t n = std::min(size, part - buffer_.size());
      buffer_.append(data, n);
      data += n;
      size -= n;
      bytes_ += static_cast<int64_t>(n);
      if (buffer_.size() == part) {
        failed_ = SendPart();
        RETURN_IF_ERROR(failed_);
      }
    }
    return Status::Ok();
  }

  Status Finish() override {
    RETURN_IF_ERROR(failed_);
    if (upload_id_.empty()) {  // it all fitted in one part: one plain PUT
      failed_ = client_->PutData(bucket_, key_, buffer_);
      finished_ = failed_.ok();
      return failed_;
    }
    if (!buffer_.empty()) failed_ = SendPart();
    while (failed_.ok() && !in_flight_.empty()) failed_ = Collect();
    if (failed_.ok()) failed_ = CompleteUpload(*client_, bucket_, key_, upload_id_, etags_);
    finished_ = failed_.ok();
    return failed_;
  }

  int64_t bytes() const override { return bytes_; }

 private:
  Status SendPart() {
    if (upload_id_.empty()) {
      ASSIGN_OR_RETURN(upload_id_, CreateUpload(*client_, bucket_, key_));
    }
    if (static_cast<int>(in_flight_.size()) >= client_->options().parallel_parts) RETURN_IF_ERROR(Collect());
    auto data = std::make_shared<std::string>(std::move(buffer_));
    buffer_.clear();
    buffer_.reserve(static_cast<size_t>(client_->options().part_bytes));
    int number = ++parts_;
    in_flight_.push_back(std::async(std::launch::async, [this, data, number]() -> Result<std::string> {
      auto fill = [&](char* out, size_t n, int64_t at) {
        std::memcpy(out, data->data() + at, n);
        return Status::Ok();
      };
      return UploadPart(*client_, bucket_, key_, upload_id_, number, static_cast<int64_t>(data->size()), fill);
    }));
    return Status::Ok();
  }

  // Waits for the oldest part in flight: parts finish in the order sent.
  Status Collect() {
    Result<std::string> etag = in_flight_.front().get();
    in_flight_.erase(in_flight_.begin());
    RETURN_IF_ERROR(etag.status());
    etags_.push_back(*etag);
    return Status::Ok();
  }

  S3Client* client_;
  std::string bucket_, key_;
  std::string upload_id_;
  std::string buffer_;
  std::vector<std::future<Result<std::string>>> in_flight_;
  std::vector<std::string> etags_;
  int parts_ = 0;
  int64_t bytes_ = 0;
  Status failed_;
  bool finished_ = false;
};

}  // namespace

std::unique_ptr<S3Client::Writer> S3StartMultipartWrite(S3Client* client, const std::string& bucket,
                                                       const std::string& key) {
  return std::make_unique<StreamingWriter>(client, bucket, key);
}

}  // namespace clusterd
