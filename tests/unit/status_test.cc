#include <catch2/catch.hpp>

#include "common/file_util.h"
#include "common/status.h"

using clusterd::Result;
using clusterd::Status;

namespace {
Result<int> Half(int x) {
  if (x % 2 != 0) return Status::InvalidArgument("odd: " + std::to_string(x));
  return x / 2;
}
Status Quarter(int x, int* out) {
  ASSIGN_OR_RETURN(int half, Half(x));
  ASSIGN_OR_RETURN(*out, Half(half));
  return Status::Ok();
}
}  // namespace

TEST_CASE("Status carries code and message, context prefixes the message") {
  Status s = Status::NotFound("node w9").WithContext("drain");
  REQUIRE_FALSE(s.ok());
  REQUIRE(s.code() == Status::Code::kNotFound);
  REQUIRE(s.message() == "drain: node w9");
  REQUIRE(s.ToString() == "not found: drain: node w9");
  REQUIRE(Status::Ok().WithContext("x").ok());
}

TEST_CASE("ASSIGN_OR_RETURN passes values through and stops at the first error") {
  int out = 0;
  REQUIRE(Quarter(8, &out).ok());
  REQUIRE(out == 2);
  Status s = Quarter(6, &out);
  REQUIRE(s.code() == Status::Code::kInvalidArgument);
  REQUIRE(s.message() == "odd: 3");
}

TEST_CASE("ReadWholeFile reports a read that fails instead of throwing", "[files]") {
  // read(2) on a folder fails with EISDIR, as one of /proc/PID/ fails with
  // ESRCH once its process is gone: an ifstream read through an
  // istreambuf_iterator threw std::ios_failure there, which ended agents.
  auto folder = clusterd::ReadWholeFile("/tmp");
  REQUIRE_FALSE(folder.ok());
  REQUIRE(folder.status().message().find("cannot read /tmp: Is a directory") != std::string::npos);
  REQUIRE(clusterd::ReadWholeFile("/nonexistent/x").status().code() == clusterd::Status::Code::kNotFound);
  REQUIRE(clusterd::ReadWholeFile("/proc/self/stat").value_or("").find(')') != std::string::npos);
}
