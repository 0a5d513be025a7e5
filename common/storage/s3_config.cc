#include "common/storage/s3_config.h"

#include <cstdlib>
#include <fstream>

#include <fmt/format.h>


namespace clusterd {

namespace {

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

std::string Trim(const std::string& s) {
  size_t begin = s.find_first_not_of(" \t\r");
  if (begin == std::string::npos) return "";
  size_t end = s.find_last_not_of(" \t\r");
  return s.substr(begin, end - begin + 1);
}

bool ValidBucket(const std::string& bucket) {
  if (bucket.size() < 3 || bucket.size() > 63) return false;
  for (char c : bucket) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-')) return false;
  }
  return bucket.front() != '-' && bucket.front() != '.' && bucket.back() != '-' && bucket.back() != '.';
}

}  // namespace

bool IsS3Location(const std::string& text) { return text.rfind("s3://", 0) == 0; }

Result<S3Location> ParseS3Location(const std::string& text) {
  if (!IsS3Location(text)) {
    return Status::InvalidArgument(fmt::format("'{}' is not an S3 location (s3://BUCKET/PREFIX)", text));
  }
  std::string rest = text.substr(5);
  S3Location location;
  size_t slash = rest.find('/');
  location.bucket = rest.substr(0, slash);
  if (!ValidBucket(location.bucket)) {
    return Status::InvalidArgument(fmt::format(
        "'{}': bucket name '{}' is not valid (3 to 63 of a-z, 0-9, '.', '-')", text, location.bucket));
  }
  if (slash != std::string::npos) {
    std::string prefix = rest.substr(slash + 1);
    while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
    size_t start = 0;
    while (start <= prefix.size()) {
      size_t end = prefix.find('/', start);
      if (end == std::string::npos) end = prefix.size();
      std::string part = prefix.substr(start, end - start);
      start = end + 1;
      if (part.empty() || part == "." || part == "..") {
        return Status::InvalidArgument(fmt::format("'{}': prefix '{}' has an empty, '.' or '..' part", text, prefix));
      }
    }
    location.prefix = prefix;
  }
  return location;
}

Result<S3Credentials> ReadCredentialsFile(const std::string& path, const std::string& profile) {
  std::ifstream in(path);
  if (!in) return Status::NotFound(fmt::format("no credentials file at {}", path));
  S3Credentials credentials;
  std::string line, section;
  while (std::getline(in, line)) {
    line = Trim(line);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line.front() == '[' && line.back() == ']') {
      section = Trim(line.substr(1, line.size() - 2));
      continue;
    }
    if (section != profile) continue;
    size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    std::string key = Trim(line.substr(0, eq)), value = Trim(line.substr(eq + 1));
    if (key == "aws_access_key_id") credentials.access_key = value;
    if (key == "aws_secret_access_key") credentials.secret_key = value;
    if (key == "aws_session_token") credentials.session_token = value;
  }
  if (credentials.access_key.empty() || credentials.secret_key.empty()) {
    return Status::NotFound(fmt::format("profile [{}] of {} has no aws_access_key_id and aws_secret_access_key",
                                        profile, path));
  }
  return credentials;
}

Result<S3Credentials> LoadS3Credentials() {
  S3Credentials credentials{Env("AWS_ACCESS_KEY_ID"), Env("AWS_SECRET_ACCESS_KEY"), Env("AWS_SESSION_TOKEN")};
  if (!credentials.access_key.empty() && !credentials.secret_key.empty()) return credentials;
  std::string path = Env("AWS_SHARED_CREDENTIALS_FILE");
  if (path.empty()) path = Env("HOME") + "/.aws/credentials";
  std::string profile = Env("AWS_PROFILE");
  if (profile.empty()) profile = "default";
  auto from_file = ReadCredentialsFile(path, profile);
  if (!from_file.ok()) {
    return Status::NotFound("no S3 credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set, and " +
                            from_file.status().message());
  }
  return from_file;
}

Result<S3Endpoint> ResolveS3Endpoint(const std::string& flag) {
  S3Endpoint endpoint;
  endpoint.region = Env("AWS_REGION");
  if (endpoint.region.empty()) endpoint.region = Env("AWS_DEFAULT_REGION");
  if (endpoint.region.empty()) endpoint.region = "us-east-1";
  endpoint.url = !flag.empty() ? flag : Env("AWS_ENDPOINT_URL");
  if (endpoint.url.empty()) endpoint.url = fmt::format("https://s3.{}.amazonaws.com", endpoint.region);
  while (!endpoint.url.empty() && endpoint.url.back() == '/') endpoint.url.pop_back();
  if (endpoint.url.rfind("http://", 0) != 0 && endpoint.url.rfind("https://", 0) != 0) {
    return Status::InvalidArgument(fmt::format("S3 endpoint '{}' must start with http:// or https://", endpoint.url));
  }
  return endpoint;
}

Result<S3ClientOptions> S3ClientOptionsFor(const std::string& url, const std::string& endpoint_flag) {
  S3ClientOptions options;
  ASSIGN_OR_RETURN(options.endpoint, ResolveS3Endpoint(endpoint_flag));
  auto credentials = LoadS3Credentials();
  if (!credentials.ok()) {
    return Status::Unauthenticated(fmt::format("{} at {}: {}", url, options.endpoint.url, credentials.status().message()));
  }
  options.credentials = *credentials;
  return options;
}

}  // namespace clusterd
