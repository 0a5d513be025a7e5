// The S3 client: the bucket and object verbs, each one or a few requests
// through S3Transport. Multipart uploads and the streaming writer are
// their own concern (s3_multipart.h).
#include "common/storage/s3_client.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include <fmt/format.h>

#include "common/sha256.h"
#include "common/storage/s3_multipart.h"
#include "common/storage/s3_xml.h"

namespace clusterd {

namespace {

// S3's least part is 5 MiB; one part and one attempt at least.
S3ClientOptions Checked(S3ClientOptions options) {
  options.part_bytes = std::max<int64_t>(options.part_bytes, int64_t{5} << 20);
  options.parallel_parts = std::max(options.parallel_parts, 1);
  options.max_attempts = std::max(options.max_attempts, 1);
  return options;
}

}  // namespace

S3Client::S3Client(S3ClientOptions options) : options_(Checked(std::move(options))), transport_(options_) {}

// The bucket and object verbs, each one or a few signed requests through
// S3Transport::Call. A put larger than a part is a multipart upload (s3_multipart.h).
Status S3Client::CheckBucket(const std::string& bucket) {
  // A listing of at most one key: unlike HEAD, its error has a body saying
  // whether the bucket is missing or the key is wrong.
  S3Request request{"GET", bucket, "", "list-type=2&max-keys=1"};
  S3Response response;
  return transport_.Call(request, &response, false, 2);
}

Status S3Client::CreateBucket(const std::string& bucket) {
  S3Response response;
  return transport_.Call(S3Request{"PUT", bucket, ""}, &response);
}

Result<int64_t> S3Client::Head(const std::string& bucket, const std::string& key) {
  S3Response response;
  RETURN_IF_ERROR(transport_.Call(S3Request{"HEAD", bucket, key}, &response, /*allow_404=*/true));
  if (response.code == 404) return Status::NotFound(fmt::format("s3://{}/{} not found at {}", bucket, key, endpoint()));
  return response.content_length;
}

Status S3Client::Put(const std::string& bucket, const std::string& key, int64_t size, const FillFn& fill,
                     const std::string& sha256, const ProgressFn& progress) {
  if (size > options_.part_bytes) return S3PutMultipart(*this, bucket, key, size, fill, progress);
  std::string sha = sha256;
  if (sha.empty()) {
    ASSIGN_OR_RETURN(sha, Sha256OfFill(fill, size));
  }
  S3Request request{"PUT", bucket, key};
  request.body_size = size;
  request.fill = fill;
  request.sha256 = sha;
  S3Response response;
  RETURN_IF_ERROR(transport_.Call(request, &response));
  if (progress) progress(size, size);
  return Status::Ok();
}

Status S3Client::PutData(const std::string& bucket, const std::string& key, const std::string& data) {
  auto fill = [&](char* out, size_t n, int64_t at) {
    std::memcpy(out, data.data() + at, n);
    return Status::Ok();
  };
  return Put(bucket, key, static_cast<int64_t>(data.size()), fill, Sha256Hex(data));
}

Status S3Client::PutFile(const std::string& bucket, const std::string& key, const std::string& path, int64_t offset,
                         int64_t length, const std::string& sha256, const ProgressFn& progress) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::IOError(fmt::format("cannot open {}: {}", path, std::strerror(errno)));
  auto fill = [&](char* data, size_t n, int64_t at) {
    size_t filled = 0;
    while (filled < n) {
      ssize_t got = pread(fd, data + filled, n - filled, offset + at + static_cast<int64_t>(filled));
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) return Status::IOError(fmt::format("cannot read {}: {}", path, std::strerror(errno)));
      if (got == 0) return Status::IOError(fmt::format("{} changed while it was being sent", path));
      filled += static_cast<size_t>(got);
    }
    return Status::Ok();
  };
  Status status = Put(bucket, key, length, fill, sha256, progress);
  close(fd);
  return status;
}

Status S3Client::Get(const std::string& bucket, const std::string& key, const SinkFn& sink,
                     const ProgressFn& progress) {
  int64_t done = 0;
  S3Request request{"GET", bucket, key};
  request.sink = [&](const char* data, size_t n) {
    RETURN_IF_ERROR(sink(data, n));
    done += static_cast<int64_t>(n);
    if (progress) progress(done, -1);
    return Status::Ok();
  };
  S3Response response;
  return transport_.Call(request, &response);
}

Status S3Client::GetRange(const std::string& bucket, const std::string& key, int64_t from, int64_t length,
                          const SinkFn& sink) {
  if (length <= 0) return Status::Ok();
  S3Request request{"GET", bucket, key};
  request.range_from = from;
  request.range_to = from + length - 1;
  int64_t received = 0;
  request.sink = [&](const char* data, size_t n) {
    if (received + static_cast<int64_t>(n) > length) {
      return Status::Corruption(fmt::format("S3 sent more than the {} bytes of {} asked for", length, key));
    }
    received += static_cast<int64_t>(n);
    return sink(data, n);
  };
  S3Response response;
  RETURN_IF_ERROR(transport_.Call(request, &response));
  if (received != length) {
    return Status::Corruption(fmt::format("S3 sent {} of the {} bytes of {} asked for", received, length, key));
  }
  return Status::Ok();
}

Status S3Client::Delete(const std::string& bucket, const std::string& key) {
  S3Response response;
  return transport_.Call(S3Request{"DELETE", bucket, key}, &response);
}

Status S3Client::Copy(const std::string& bucket, const std::string& from_key, const std::string& to_key) {
  S3Request request{"PUT", bucket, to_key};
  request.headers.push_back("x-amz-copy-source: /" + bucket + "/" + S3UriEncode(from_key, true));
  S3Response response;
  RETURN_IF_ERROR(transport_.Call(request, &response));
  // Like completing a multipart upload, a copy may fail after a 200.
  return transport_.ErrorInBody(request, response);
}

Result<std::vector<std::string>> S3Client::List(const std::string& bucket, const std::string& prefix) {
  std::vector<std::string> keys;
  std::string token;
  while (true) {
    // Query names in sorted order, as SigV4's canonical form has them.
    std::string query;
    if (!token.empty()) query += "continuation-token=" + S3UriEncode(token, false) + "&";
    query += "list-type=2&prefix=" + S3UriEncode(prefix, false);
    S3Response response;
    RETURN_IF_ERROR(transport_.Call(S3Request{"GET", bucket, "", query}, &response));
    auto page = S3XmlAnswer::Parse(response.body);
    if (!page.ok()) {
      return page.status().WithContext(fmt::format("listing s3://{}/{} at {}", bucket, prefix, endpoint()));
    }
    for (std::string& key : page->Values("Key")) keys.push_back(std::move(key));
    if (page->Value("IsTruncated") != "true") break;
    token = page->Value("NextContinuationToken");
    if (token.empty()) break;
  }
  return keys;
}


std::unique_ptr<S3Client::Writer> S3Client::StartWrite(const std::string& bucket, const std::string& key) {
  return S3StartMultipartWrite(this, bucket, key);
}

}  // namespace clusterd
