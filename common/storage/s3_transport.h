// One S3 request over libcurl, for radosgw, MinIO and AWS alike: path-style
// addressing (http://endpoint/BUCKET/KEY), signed with SigV4 by curl itself
// (CURLOPT_AWS_SIGV4), sent on this thread's own curl handle so that each
// thread keeps its connection open between requests. Connection failures,
// timeouts (a transfer stalled for `stall_seconds`) and 5xx answers are
// retried with exponential backoff, up to `max_attempts`; client errors are
// not. A retried download resumes with a Range request, so the sink sees
// every byte once and in order. An error answer becomes one line naming
// the bucket and the endpoint (Explain). S3Client's verbs and the
// multipart uploads (s3_multipart.h) are built on it.
// Thread-safe: calls may run at once from many threads.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/storage/s3_config.h"

namespace clusterd {

// Fills [data, data + n) with the bytes at offset `at` of the object. May
// be called again for the same bytes when a request is retried.
using S3FillFn = std::function<Status(char* data, size_t n, int64_t at)>;
// Takes the next received bytes, in order, each once.
using S3SinkFn = std::function<Status(const char* data, size_t n)>;

struct S3Request {
  std::string method;  // GET HEAD PUT POST DELETE
  std::string bucket;
  std::string key;     // "" for the bucket itself
  std::string query;   // already sorted and encoded, "a=1&b=2", every name with '='
  int64_t body_size = 0;
  S3FillFn fill;       // the body's bytes (none when body_size is 0)
  std::string sha256;  // of the body; "" means the empty body's
  S3SinkFn sink;       // a 2xx answer's body (nullptr: kept in S3Response::body)
  int64_t range_from = 0;  // GET: "Range: bytes=N-" when > 0
  int64_t range_to = -1;   // GET: with it, "Range: bytes=N-M" (M inclusive; the answer must be 206)
  std::vector<std::string> headers;  // more, "name: value" (signed too)
};
struct S3Response {
  long code = 0;
  std::string body;  // error bodies, and 2xx bodies without a sink (bounded)
  std::string etag;
  int64_t content_length = -1;
};
class S3Transport {
 public:
  explicit S3Transport(S3ClientOptions options) : options_(std::move(options)) {}

// One request with retries; a non-2xx answer after them is an error
// Status (Explain), except 404, which callers often expect: then `*out`
// holds the answer and OK is returned only if `allow_404`.
Status Call(S3Request request, S3Response* out, bool allow_404 = false, int max_attempts = 0);
// The one-line error for a non-2xx answer.
Status Explain(const S3Request& request, const S3Response& response) const;
// The error a 2xx answer may still carry in its body (CopyObject and
// CompleteMultipartUpload fail that way), or a body that is not XML;
// OK for an empty body or one without an error code.
Status ErrorInBody(const S3Request& request, const S3Response& response) const;


 private:
  // One attempt; `retry` says whether another may help.
  Status Attempt(const S3Request& request, S3Response* out, bool* retry, int64_t* received);

  S3ClientOptions options_;
};

// Hex SHA-256 of `size` bytes from `fill`, read in 1 MiB pieces.
Result<std::string> Sha256OfFill(const S3FillFn& fill, int64_t size);

// Percent-encodes for a URL path or query value (RFC 3986 unreserved kept;
// '/' kept when `keep_slash`).
std::string S3UriEncode(const std::string& text, bool keep_slash);

}  // namespace clusterd
