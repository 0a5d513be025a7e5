// S3 locations and credentials files: pure parsing; the loading of libcurl.
#include <catch2/catch.hpp>

#include <fstream>
#include <string>

#include "common/storage/curl_library.h"
#include "common/storage/s3_config.h"
#include "temp_tree.h"

namespace clusterd {
namespace {

TEST_CASE("S3 locations parse into bucket and prefix, and bad ones are refused by name", "[s3]") {
  auto plain = ParseS3Location("s3://my-bucket");
  REQUIRE(plain.ok());
  CHECK(plain->bucket == "my-bucket");
  CHECK(plain->prefix.empty());
  auto nested = ParseS3Location("s3://my.bucket/runs/exp1/");
  REQUIRE(nested.ok());
  CHECK(nested->prefix == "runs/exp1");
  CHECK(nested->ToString() == "s3://my.bucket/runs/exp1");
  CHECK(ParseS3Location("/local/path").status().message() == "'/local/path' is not an S3 location (s3://BUCKET/PREFIX)");
  CHECK_THAT(ParseS3Location("s3://UPPER/x").status().message(), Catch::Contains("bucket name 'UPPER'"));
  CHECK_THAT(ParseS3Location("s3://ab").status().message(), Catch::Contains("bucket name 'ab'"));
  CHECK_THAT(ParseS3Location("s3://bucket/a//b").status().message(), Catch::Contains("prefix 'a//b'"));
  CHECK_THAT(ParseS3Location("s3://bucket/a/../b").status().message(), Catch::Contains("'..'"));
}

TEST_CASE("S3 credentials come from the named profile of a credentials file", "[s3]") {
  testing::TempTree dir;
  std::string path = dir.root() + "/credentials";
  std::ofstream(path) << "# comment\n[default]\naws_access_key_id = AKIDEFAULT\naws_secret_access_key=SECRET1\n\n"
                         "[other]\naws_access_key_id=AKIOTHER\naws_secret_access_key = SECRET2\n"
                         "aws_session_token = TOKEN\n[empty]\n";
  auto def = ReadCredentialsFile(path, "default");
  REQUIRE(def.ok());
  CHECK(def->access_key == "AKIDEFAULT");
  CHECK(def->secret_key == "SECRET1");
  CHECK(def->session_token.empty());
  auto other = ReadCredentialsFile(path, "other");
  REQUIRE(other.ok());
  CHECK(other->access_key == "AKIOTHER");
  CHECK(other->session_token == "TOKEN");
  CHECK_THAT(ReadCredentialsFile(path, "empty").status().message(), Catch::Contains("profile [empty]"));
  CHECK(ReadCredentialsFile(dir.root() + "/none", "default").status().code() == Status::Code::kNotFound);
}

TEST_CASE("libcurl is opened once, at the first S3 need, with every function the client calls", "[s3]") {
  auto first = LoadCurl();
  REQUIRE(first.ok());
  const CurlLibrary& lib = **first;
  for (const void* fn : {reinterpret_cast<const void*>(lib.easy_init), reinterpret_cast<const void*>(lib.easy_setopt),
                         reinterpret_cast<const void*>(lib.easy_perform), reinterpret_cast<const void*>(lib.slist_append)}) {
    REQUIRE(fn != nullptr);
  }
  REQUIRE(std::string(lib.easy_strerror(CURLE_COULDNT_CONNECT)) == "Couldn't connect to server");
  auto again = LoadCurl();
  REQUIRE(again.ok());
  REQUIRE(*again == *first);
}

}  // namespace
}  // namespace clusterd
