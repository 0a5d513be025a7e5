// Where an S3 store is and how to sign for it: an s3://BUCKET/PREFIX
// location, the endpoint (--s3-endpoint, else AWS_ENDPOINT_URL, else AWS
// itself), the region (AWS_REGION, AWS_DEFAULT_REGION, us-east-1) and the
// credentials, found as the AWS tools find them: AWS_ACCESS_KEY_ID,
// AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN, else the profile AWS_PROFILE
// (default "default") of ~/.aws/credentials (AWS_SHARED_CREDENTIALS_FILE).
// Each machine signs with its own credentials: see config/README.md.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"

namespace clusterd {

struct S3Location {
  std::string bucket;
  std::string prefix;  // "" or without leading/trailing '/': "runs/exp1"
  std::string ToString() const { return "s3://" + bucket + (prefix.empty() ? "" : "/" + prefix); }
};

// InvalidArgument naming the text unless it is s3://BUCKET[/PREFIX] with a
// bucket name S3 accepts (3 to 63 of a-z, 0-9, '.', '-').
Result<S3Location> ParseS3Location(const std::string& text);
bool IsS3Location(const std::string& text);  // starts with s3://

struct S3Credentials {
  std::string access_key;
  std::string secret_key;
  std::string session_token;  // "" unless temporary credentials
};

// From the environment, then the credentials file. NotFound saying where it
// looked when neither has a key.
Result<S3Credentials> LoadS3Credentials();
// Reads profile `profile` of the INI file at `path` (tested alone).
Result<S3Credentials> ReadCredentialsFile(const std::string& path, const std::string& profile);

struct S3Endpoint {
  std::string url;     // http(s)://host[:port], no trailing '/'
  std::string region;
};
// `flag` (--s3-endpoint) wins over AWS_ENDPOINT_URL; with neither, AWS's
// own regional endpoint. InvalidArgument unless http:// or https://.
Result<S3Endpoint> ResolveS3Endpoint(const std::string& flag);

// How an S3Client reaches its store and moves objects.
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

// The endpoint (`endpoint_flag`, as ResolveS3Endpoint) and this machine's
// credentials for the store at `url`, the rest defaults. Unauthenticated
// naming the store and the endpoint when there are no credentials.
Result<S3ClientOptions> S3ClientOptionsFor(const std::string& url, const std::string& endpoint_flag);

}  // namespace clusterd
