// What the dashboard reads from a request target and its Cookie header:
// parameters decoded (or refused when badly encoded), the token taken out
// of an address without disturbing the rest, one cookie among several.
#include <catch2/catch.hpp>

#include "daemon/http/http_query.h"

using namespace clusterd;

TEST_CASE("http query: parameters are found by their whole name and percent-decoded", "[http]") {
  const std::string target = "/job?xid=no&id=job-0001%2Dab+c&empty=&token=T";
  REQUIRE(TargetPath(target) == "/job");
  REQUIRE(QueryParam(target, "id") == std::optional<std::string>("job-0001-ab c"));
  REQUIRE(QueryParam(target, "empty") == std::optional<std::string>(""));
  REQUIRE_FALSE(QueryParam(target, "i").has_value());
  REQUIRE_FALSE(QueryParam("/job", "id").has_value());
  // Bad or cut escapes are refused, not guessed at.
  REQUIRE_FALSE(QueryParam("/job?id=%zz", "id").has_value());
  REQUIRE_FALSE(QueryParam("/job?id=ab%4", "id").has_value());
  REQUIRE_FALSE(QueryParam("/job?id=ab%", "id").has_value());
}

TEST_CASE("http query: the token leaves the address and the rest stays as sent", "[http]") {
  REQUIRE(WithoutParam("/?token=T", "token") == "/");
  REQUIRE(WithoutParam("/job?token=T&id=job%2D1", "token") == "/job?id=job%2D1");
  REQUIRE(WithoutParam("/jobs?state=FAILED&token=T&tokens=x", "token") == "/jobs?state=FAILED&tokens=x");
}

TEST_CASE("http query: a cookie is read by its whole name among others", "[http]") {
  REQUIRE(CookieValue("a=1; clusterd_token=abc; b=2", "clusterd_token") == "abc");
  REQUIRE(CookieValue("clusterd_token=abc", "clusterd_token") == "abc");
  REQUIRE(CookieValue("xclusterd_token=abc; clusterd_tokens=d", "clusterd_token").empty());
  REQUIRE(CookieValue("", "clusterd_token").empty());
}
