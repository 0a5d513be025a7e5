// The S3 client against a real radosgw (tests/integration/ceph_fixture.h):
// round trips, multipart uploads in parallel, a streamed upload, checksums
// the server checks, retries across a gateway restart, and the one-line
// errors a user sees for a missing bucket, wrong credentials and an
// unreachable endpoint.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "ceph_fixture.h"
#include "common/storage/s3_client.h"
#include "common/sha256.h"
#include "harness.h"

namespace clusterd::testing {
namespace {

std::string GetAll(S3Client& client, const std::string& bucket, const std::string& key, Status* status) {
  std::string got;
  *status = client.Get(bucket, key, [&](const char* data, size_t n) {
    got.append(data, n);
    return Status::Ok();
  });
  return got;
}

TEST_CASE("S3 client puts, heads, gets, lists and deletes objects on radosgw", "[ceph][s3]") {
  REQUIRE_CEPH(ceph);
  REQUIRE(ceph->CreateBucket("roundtrip"));
  S3Client client(ceph->ClientOptions());
  REQUIRE(client.CheckBucket("roundtrip").ok());

  REQUIRE(client.PutData("roundtrip", "a/b c+d.txt", "hello").ok());  // a key that needs encoding
  REQUIRE(client.PutData("roundtrip", "a/other", "").ok());           // an empty object
  auto size = client.Head("roundtrip", "a/b c+d.txt");
  REQUIRE(size.ok());
  CHECK(*size == 5);
  Status status;
  CHECK(GetAll(client, "roundtrip", "a/b c+d.txt", &status) == "hello");
  REQUIRE(status.ok());
  auto keys = client.List("roundtrip", "a/");
  REQUIRE(keys.ok());
  CHECK(*keys == std::vector<std::string>{"a/b c+d.txt", "a/other"});

  REQUIRE(client.Delete("roundtrip", "a/other").ok());
  auto gone = client.Head("roundtrip", "a/other");
  REQUIRE(gone.status().code() == Status::Code::kNotFound);
  CHECK_THAT(gone.status().message(), Catch::Contains("s3://roundtrip/a/other") && Catch::Contains(ceph->endpoint()));
  GetAll(client, "roundtrip", "a/other", &status);
  CHECK(status.code() == Status::Code::kNotFound);
}

TEST_CASE("S3 client uploads a large file in parallel parts and a stream as it is written", "[ceph][s3]") {
  REQUIRE_CEPH(ceph);
  REQUIRE(ceph->CreateBucket("multipart"));
  S3Client client(ceph->ClientOptions());
  // 23 MiB in 5 MiB parts: five parts, the last one short.
  std::string bytes = RandomBytes((23 << 20) + 123, 1);
  std::string path = ceph->dir() + "/big.bin";
  std::ofstream(path, std::ios::binary) << bytes;
  int64_t last_done = 0;
  std::mutex mutex;
  Status put = client.PutFile("multipart", "big", path, 0, static_cast<int64_t>(bytes.size()), "",
                              [&](int64_t done, int64_t total) {
                                std::lock_guard<std::mutex> lock(mutex);
                                last_done = std::max(last_done, done);
                                CHECK(total == static_cast<int64_t>(bytes.size()));
                              });
  REQUIRE(put.ok());
  CHECK(last_done == static_cast<int64_t>(bytes.size()));
  auto size = client.Head("multipart", "big");
  REQUIRE(size.ok());
  CHECK(*size == static_cast<int64_t>(bytes.size()));
  Sha256 hash;
  Status got = client.Get("multipart", "big", [&](const char* data, size_t n) {
    hash.Update(data, n);
    return Status::Ok();
  });
  REQUIRE(got.ok());
  CHECK(hash.HexDigest() == Sha256Hex(bytes));

  // The same bytes written in odd-sized pieces, as a packer makes them.
  auto writer = client.StartWrite("multipart", "streamed");
  for (size_t at = 0; at < bytes.size(); at += 777777) {
    REQUIRE(writer->Write(bytes.data() + at, std::min<size_t>(777777, bytes.size() - at)).ok());
  }
  REQUIRE(writer->Finish().ok());
  CHECK(writer->bytes() == static_cast<int64_t>(bytes.size()));
  Status status;
  CHECK(Sha256Hex(GetAll(client, "multipart", "streamed", &status)) == Sha256Hex(bytes));

  // A writer dropped before Finish leaves no object (the upload is aborted).
  {
    auto dropped = client.StartWrite("multipart", "dropped");
    REQUIRE(dropped->Write(bytes.data(), 11 << 20).ok());
  }
  CHECK(client.Head("multipart", "dropped").status().code() == Status::Code::kNotFound);
}

TEST_CASE("S3 refuses an upload whose bytes do not match the SHA-256 sent with them", "[ceph][s3]") {
  REQUIRE_CEPH(ceph);
  REQUIRE(ceph->CreateBucket("checksums"));
  S3Client client(ceph->ClientOptions());
  std::string data = "the bytes";
  auto fill = [&](char* out, size_t n, int64_t at) {
    std::memcpy(out, data.data() + at, n);
    return Status::Ok();
  };
  Status put = client.Put("checksums", "k", static_cast<int64_t>(data.size()), fill, Sha256Hex("other bytes"));
  REQUIRE_FALSE(put.ok());
  CHECK(put.code() == Status::Code::kCorruption);
  CHECK(client.Head("checksums", "k").status().code() == Status::Code::kNotFound);
}

TEST_CASE("S3 client retries across a radosgw restart", "[ceph][s3]") {
  REQUIRE_CEPH(ceph);
  REQUIRE(ceph->CreateBucket("retries"));
  S3ClientOptions options = ceph->ClientOptions();
  options.max_attempts = 20;
  options.max_backoff_ms = 500;
  S3Client client(options);
  std::string bytes = RandomBytes(12 << 20, 2);
  ceph->KillGateway();
  Status put;
  std::thread uploader([&] {
    auto fill = [&](char* out, size_t n, int64_t at) {
      std::memcpy(out, bytes.data() + at, n);
      return Status::Ok();
    };
    put = client.Put("retries", "k", static_cast<int64_t>(bytes.size()), fill, "");
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(800));
  REQUIRE(ceph->RestartGateway());
  uploader.join();
  REQUIRE(put.ok());
  Status status;
  CHECK(Sha256Hex(GetAll(client, "retries", "k", &status)) == Sha256Hex(bytes));
}

TEST_CASE("S3 errors name the bucket and endpoint for a missing bucket, bad credentials, no server", "[ceph][s3]") {
  REQUIRE_CEPH(ceph);
  REQUIRE(ceph->CreateBucket("present"));
  S3Client client(ceph->ClientOptions());

  Status missing = client.CheckBucket("absent-bucket");
  CHECK(missing.code() == Status::Code::kNotFound);
  CHECK(missing.message() == "bucket absent-bucket does not exist at " + ceph->endpoint());

  S3ClientOptions wrong = ceph->ClientOptions();
  wrong.credentials.secret_key = "not-the-secret";
  Status refused = S3Client(wrong).CheckBucket("present");
  CHECK(refused.code() == Status::Code::kUnauthenticated);
  CHECK_THAT(refused.message(), Catch::Contains("bucket present") && Catch::Contains(ceph->endpoint()) &&
                                    Catch::Contains("SignatureDoesNotMatch"));
  wrong.credentials.access_key = "nobody";
  CHECK_THAT(S3Client(wrong).CheckBucket("present").message(), Catch::Contains("InvalidAccessKeyId"));

  S3ClientOptions nowhere = ceph->ClientOptions();
  nowhere.endpoint.url = "http://127.0.0.1:" + std::to_string(FreePort());
  auto start = std::chrono::steady_clock::now();
  Status unreachable = S3Client(nowhere).CheckBucket("present");
  CHECK(unreachable.code() == Status::Code::kUnavailable);
  CHECK_THAT(unreachable.message(), Catch::Contains("cannot reach S3 at " + nowhere.endpoint.url) &&
                                        Catch::Contains("bucket present"));
  CHECK(unreachable.message().find('\n') == std::string::npos);
  CHECK(MillisSince(start) < 10000);  // the check at start does not retry for long
}

}  // namespace
}  // namespace clusterd::testing
