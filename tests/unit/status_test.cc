#include <catch2/catch.hpp>

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
