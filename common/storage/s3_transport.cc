// One S3 request: signed by curl, retried with backoff, its error answer
// explained in one line (s3_transport.h).
#include "common/storage/s3_transport.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <strings.h>
#include <sys/socket.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "common/sha256.h"
#include "common/storage/curl_library.h"
#include "common/storage/s3_xml.h"

namespace clusterd {

namespace {

constexpr const char* kEmptySha256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
constexpr size_t kMaxKeptBody = 1 << 20;  // an answer kept in memory (errors, listings)

// One handle per thread, kept for the thread's life: curl_easy_reset keeps
// its connection cache, so a thread's requests reuse one connection.
struct ThreadCurl {
  const CurlLibrary* lib = nullptr;
  CURL* handle = nullptr;
  ~ThreadCurl() {
    if (handle) lib->easy_cleanup(handle);
  }
};
CURL* ThisThreadsCurl(const CurlLibrary& lib) {
  thread_local ThreadCurl curl;
  if (!curl.handle) {
    curl.lib = &lib;
    curl.handle = lib.easy_init();
  }
  return curl.handle;
}

// The socket of this thread's connection, as curl made it (curl does not
// say which one is active from inside a transfer's callbacks).
thread_local curl_socket_t this_threads_socket = CURL_SOCKET_BAD;
int OnSocket(void*, curl_socket_t socket, curlsocktype) {
  this_threads_socket = socket;
  return CURL_SOCKOPT_OK;
}

struct Transfer {
  const S3Request* request;
  S3Response* response;
  CURL* curl;
  const CurlLibrary* lib;
  int64_t read_at = 0;    // body bytes handed to curl
  int64_t* received;      // sink bytes, across attempts
  bool decided = false;   // whether the answer's code was looked at
  bool acked = false;     // whether the answer's first bytes were acknowledged at once
  bool to_sink = false;
  Status failed;          // a fill or sink error: not retried
};

size_t OnRead(char* buffer, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  int64_t left = t->request->body_size - t->read_at;
  size_t n = static_cast<size_t>(std::min<int64_t>(left, static_cast<int64_t>(size * count)));
  if (n == 0) return 0;
  Status filled = t->request->fill(buffer, n, t->read_at);
  if (!filled.ok()) {
    t->failed = filled;
    return CURL_READFUNC_ABORT;
  }
  t->read_at += static_cast<int64_t>(n);
  return n;
}

int OnSeek(void* user, curl_off_t offset, int origin) {
  auto* t = static_cast<Transfer*>(user);
  if (origin != SEEK_SET) return CURL_SEEKFUNC_CANTSEEK;
  t->read_at = offset;
  return CURL_SEEKFUNC_OK;
}

size_t OnWrite(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  size_t n = size * count;
  if (!t->decided) {
    long code = 0;
    t->lib->easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &code);
    t->to_sink = code / 100 == 2 && t->request->sink != nullptr;
    t->decided = true;
    if (t->request->range_to >= 0 && code == 200) {  // the whole object, not the range asked for
      t->failed = Status::Corruption(fmt::format("S3 answered a ranged GET of {} with the whole object",
                                                 t->request->key));
      return 0;
    }
  }
  if (t->to_sink) {
    Status taken = t->request->sink(data, n);
    if (!taken.ok()) {
      t->failed = taken;
      return 0;  // aborts the transfer
    }
    *t->received += static_cast<int64_t>(n);
  } else if (t->response->body.size() < kMaxKeptBody) {
    t->response->body.append(data, std::min(n, kMaxKeptBody - t->response->body.size()));
  }
  return n;
}

size_t OnHeader(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  size_t n = size * count;
  if (!t->acked) {
    // The answer's first bytes are in: acknowledge them now. A server that
    // writes the headers and a small body apart, with Nagle on (radosgw's
    // beast), holds the body until this ACK, and on a kept-alive
    // connection the kernel delays it 40 ms: every small GET (a manifest)
    // took 43 ms instead of 2. Quick-ACK mode does not last, so per answer.
    t->acked = true;
    if (this_threads_socket != CURL_SOCKET_BAD) {
      int on = 1;
      setsockopt(this_threads_socket, IPPROTO_TCP, TCP_QUICKACK, &on, sizeof on);
    }
  }
  std::string line(data, n);
  if (line.size() > 5 && strncasecmp(line.c_str(), "etag:", 5) == 0) {
    std::string value = line.substr(5);
    value.erase(0, value.find_first_not_of(" \t"));
    while (!value.empty() && (value.back() == '\r' || value.back() == '\n' || value.back() == ' ')) value.pop_back();
    t->response->etag = value;
  }
  return n;
}

bool RetryableCurlError(CURLcode code) {
  switch (code) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_SSL_CONNECT_ERROR:
      return true;
    default:
      return false;
  }
}

bool RetryableHttp(long code) { return code >= 500 || code == 408 || code == 429; }

std::string Where(const S3Request& r) {
  return r.key.empty() ? "bucket " + r.bucket : fmt::format("s3://{}/{}", r.bucket, r.key);
}

}  // namespace

std::string S3UriEncode(const std::string& text, bool keep_slash) {
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || (keep_slash && c == '/')) {
      out.push_back(static_cast<char>(c));
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

Result<std::string> Sha256OfFill(const S3FillFn& fill, int64_t size) {
  Sha256 hash;
  std::string buffer(static_cast<size_t>(std::min<int64_t>(size, 1 << 20)), '\0');
  for (int64_t at = 0; at < size;) {
    size_t n = static_cast<size_t>(std::min<int64_t>(size - at, static_cast<int64_t>(buffer.size())));
    RETURN_IF_ERROR(fill(buffer.data(), n, at));
    hash.Update(buffer.data(), n);
    at += static_cast<int64_t>(n);
  }
  return hash.HexDigest();
}

Status S3Transport::Attempt(const S3Request& request, S3Response* out, bool* retry, int64_t* received) {
  *retry = false;
  ASSIGN_OR_RETURN(const CurlLibrary* lib, LoadCurl());
  CURL* curl = ThisThreadsCurl(*lib);
  if (!curl) return Status::Unavailable("curl_easy_init failed: out of memory?");
  lib->easy_reset(curl);
  *out = S3Response();
  Transfer t{&request, out, curl, lib, 0, received};
  std::string url = options_.endpoint.url + "/" + request.bucket;
  if (!request.key.empty()) url += "/" + S3UriEncode(request.key, true);
  if (!request.query.empty()) url += "?" + request.query;
  std::string provider = "aws:amz:" + options_.endpoint.region + ":s3";
  lib->easy_setopt(curl, CURLOPT_URL, url.c_str());
  lib->easy_setopt(curl, CURLOPT_AWS_SIGV4, provider.c_str());
  lib->easy_setopt(curl, CURLOPT_USERNAME, options_.credentials.access_key.c_str());
  lib->easy_setopt(curl, CURLOPT_PASSWORD, options_.credentials.secret_key.c_str());
  lib->easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  lib->easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, static_cast<long>(options_.connect_timeout_seconds));
  lib->easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
  lib->easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, static_cast<long>(options_.stall_seconds));
  lib->easy_setopt(curl, CURLOPT_WRITEFUNCTION, OnWrite);
  lib->easy_setopt(curl, CURLOPT_WRITEDATA, &t);
  lib->easy_setopt(curl, CURLOPT_HEADERFUNCTION, OnHeader);
  lib->easy_setopt(curl, CURLOPT_HEADERDATA, &t);
  lib->easy_setopt(curl, CURLOPT_SOCKOPTFUNCTION, OnSocket);

  // curl 7.88 signs the payload hash it is given but sends none of its own,
  // and S3 wants one: ours is also what the server checks the body against.
  curl_slist* headers = nullptr;
  std::string sha = "x-amz-content-sha256: " + (request.sha256.empty() ? std::string(kEmptySha256) : request.sha256);
  headers = lib->slist_append(headers, sha.c_str());
  std::string token;
  if (!options_.credentials.session_token.empty()) {
    token = "x-amz-security-token: " + options_.credentials.session_token;
    headers = lib->slist_append(headers, token.c_str());
  }
  // No "Expect:" to turn 100-continue off: curl 7.88 signs the emptied
  // header as if it were sent, and the signature no longer matches.
  for (const std::string& header : request.headers) headers = lib->slist_append(headers, header.c_str());
  std::string range;
  if (request.method == "GET" && (request.range_from > 0 || request.range_to >= 0)) {
    range = fmt::format("Range: bytes={}-{}", request.range_from,
                        request.range_to >= 0 ? std::to_string(request.range_to) : std::string());
    headers = lib->slist_append(headers, range.c_str());
  }

  if (request.method == "HEAD") {
    lib->easy_setopt(curl, CURLOPT_NOBODY, 1L);
  } else if (request.method == "PUT") {
    lib->easy_setopt(curl, CURLOPT_UPLOAD, 1L);
    lib->easy_setopt(curl, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(request.body_size));
  } else if (request.method == "POST") {
    lib->easy_setopt(curl, CURLOPT_POST, 1L);
    lib->easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body_size));
    headers = lib->slist_append(headers, "Content-Type: application/xml");
  } else if (request.method == "DELETE") {
    lib->easy_setopt(curl, CURLOPT_CUSTOMREQUEST, "DELETE");
  }
  if (request.body_size > 0) {
    lib->easy_setopt(curl, CURLOPT_READFUNCTION, OnRead);
    lib->easy_setopt(curl, CURLOPT_READDATA, &t);
    lib->easy_setopt(curl, CURLOPT_SEEKFUNCTION, OnSeek);
    lib->easy_setopt(curl, CURLOPT_SEEKDATA, &t);
  }
  lib->easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  CURLcode code = lib->easy_perform(curl);
  lib->slist_free_all(headers);
  lib->easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &out->code);
  curl_off_t length = -1;
  lib->easy_getinfo(curl, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length);
  out->content_length = length;
  *retry = false;
  if (!t.failed.ok()) return t.failed;
  if (code != CURLE_OK) {
    *retry = RetryableCurlError(code);
    return Status::Unavailable(fmt::format("cannot reach S3 at {} ({}): {}", options_.endpoint.url, Where(request),
                                           lib->easy_strerror(code)));
  }
  if (RetryableHttp(out->code)) *retry = true;
  return Status::Ok();
}

Status S3Transport::Call(S3Request request, S3Response* out, bool allow_404, int max_attempts) {
  int attempts = max_attempts > 0 ? max_attempts : options_.max_attempts;
  int64_t backoff_ms = options_.first_backoff_ms;
  int64_t received = 0;
  const int64_t first_byte = request.range_from;
  for (int attempt = 1;; ++attempt) {
    // A download that broke off goes on where it stopped.
    request.range_from = first_byte + received;
    bool retry = false;
    Status status = Attempt(request, out, &retry, &received);
    if (status.ok() && !retry) {
      if (out->code / 100 == 2 || (allow_404 && out->code == 404)) return Status::Ok();
      return Explain(request, *out);
    }
    if (!retry || attempt >= attempts) {
      if (!status.ok()) {
        return attempt > 1 ? status.WithContext(fmt::format("after {} attempts", attempt)) : status;
      }
      return Explain(request, *out).WithContext(fmt::format("after {} attempts", attempt));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(backoff_ms));
    backoff_ms = std::min<int64_t>(backoff_ms * 2, options_.max_backoff_ms);
  }
}

Status S3Transport::Explain(const S3Request& request, const S3Response& response) const {
  std::string code = S3ErrorCode(response.body);
  const std::string& endpoint = options_.endpoint.url;
  std::string why = code.empty() ? "" : " (" + code + ")";
  if (response.code == 404 && (code == "NoSuchBucket" || request.key.empty())) {
    return Status::NotFound(fmt::format("bucket {} does not exist at {}", request.bucket, endpoint));
  }
  if (response.code == 404) return Status::NotFound(fmt::format("{} not found at {}", Where(request), endpoint));
  if (response.code == 403 || response.code == 401) {
    return Status::Unauthenticated(fmt::format(
        "S3 at {} refused the credentials for bucket {}{}: check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY "
        "(or ~/.aws/credentials)",
        endpoint, request.bucket, why));
  }
  if (code == "XAmzContentSHA256Mismatch" || code == "BadDigest") {
    return Status::Corruption(fmt::format("S3 at {} got other bytes than sent for {}{}", endpoint, Where(request), why));
  }
  if (RetryableHttp(response.code)) {
    return Status::Unavailable(
        fmt::format("S3 at {} answered {}{} for {}", endpoint, response.code, why, Where(request)));
  }
  return Status::IOError(fmt::format("S3 at {} answered {}{} to {} {}", endpoint, response.code, why, request.method,
                                     Where(request)));
}

Status S3Transport::ErrorInBody(const S3Request& request, const S3Response& response) const {
  if (response.body.empty()) return Status::Ok();
  auto answer = S3XmlAnswer::Parse(response.body);
  if (!answer.ok()) {
    return answer.status().WithContext(fmt::format("{} {} at {}", request.method, Where(request), options_.endpoint.url));
  }
  if (answer->Value("Code").empty()) return Status::Ok();
  return Explain(request, S3Response{500, response.body});
}

}  // namespace clusterd
