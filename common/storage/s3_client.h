// An S3 client on libcurl, for radosgw, MinIO and AWS alike: path-style
// addressing (http://endpoint/BUCKET/KEY), requests signed with SigV4 by
// curl itself (CURLOPT_AWS_SIGV4), one curl handle per thread so that each
// thread keeps its connection open between requests.
//
// Every upload sends the SHA-256 of its bytes as x-amz-content-sha256,
// which the server checks before it stores anything. Objects larger than
// `part_bytes` go up as a multipart upload, `parallel_parts` parts at once,
// each part hashed then sent from its source (never a whole file in
// memory). Downloads stream to a sink; a retried download resumes with a
// Range request, so the sink sees every byte once and in order.
// Connection failures, timeouts (a transfer stalled for `stall_seconds`)
// and 5xx answers are retried with exponential backoff, up to
// `max_attempts`; client errors are not.
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
#include "common/status.h"

namespace clusterd {

struct S3ClientOptions {
  S3Endpoint endpoint;
  S3Credentials credentials;
  int64_t part_bytes = int64_t{16} << 20;  // multipart part size, and the size above which it is used (>= 5 MiB)
  int parallel_parts = 4;                  // parts in flight at once, per upload
  int max_attempts = 8;                    // per request, the first included
  int first_backoff_ms = 200;              // doubled after each failed attempt...
  int max_backoff_ms = 4000;               // ...up to this
  int connect_timeout_seconds = 5;
  int stall_seconds = 30;                  // a transfer moving no byte for this long is a timeout
};

class S3Client {
 public:
  // Fills [data, data + n) with the bytes at offset `at` of the object. May
  // be called again for the same bytes when a request is retried.
  using FillFn = std::function<Status(char* data, size_t n, int64_t at)>;
  // Takes the next received bytes, in order, each once.
  using SinkFn = std::function<Status(const char* data, size_t n)>;
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

  // The parts of the client's HTTP layer that its multipart code uses.
  struct Request {
    std::string method;  // GET HEAD PUT POST DELETE
    std::string bucket;
    std::string key;     // "" for the bucket itself
    std::string query;   // already sorted and encoded, "a=1&b=2", every name with '='
    int64_t body_size = 0;
    FillFn fill;         // the body's bytes (none when body_size is 0)
    std::string sha256;  // of the body; "" means the empty body's
    SinkFn sink;         // a 2xx answer's body (nullptr: kept in Response::body)
    int64_t range_from = 0;  // GET: "Range: bytes=N-" when > 0
    int64_t range_to = -1;   // GET: with it, "Range: bytes=N-M" (M inclusive; the answer must be 206)
    std::vector<std::string> headers;  // more, "name: value" (signed too)
  };
  struct Response {
    long code = 0;
    std::string body;  // error bodies, and 2xx bodies without a sink (bounded)
    std::string etag;
    int64_t content_length = -1;
  };
  // One request with retries; a non-2xx answer after them is an error
  // Status (Explain), except 404, which callers often expect: then `*out`
  // holds the answer and OK is returned only if `allow_404`.
  Status Call(Request request, Response* out, bool allow_404 = false, int max_attempts = 0);
  // The one-line error for a non-2xx answer.
  Status Explain(const Request& request, const Response& response) const;
  // The error a 2xx answer may still carry in its body (CopyObject and
  // CompleteMultipartUpload fail that way), or a body that is not XML;
  // OK for an empty body or one without an error code.
  Status ErrorInBody(const Request& request, const Response& response) const;

 private:
  // One attempt; `retry` says whether another may help.
  Status Attempt(const Request& request, Response* out, bool* retry, int64_t* received);

  S3ClientOptions options_;
};

// Hex SHA-256 of `size` bytes from `fill`, read in 1 MiB pieces.
Result<std::string> Sha256OfFill(const S3Client::FillFn& fill, int64_t size);

// Percent-encodes for a URL path or query value (RFC 3986 unreserved kept;
// '/' kept when `keep_slash`).
std::string S3UriEncode(const std::string& text, bool keep_slash);

}  // namespace clusterd
