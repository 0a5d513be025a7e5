#include <catch2/catch.hpp>

#include "daemon/ha/dashboard_redirect.h"

using clusterd::RequestTarget;

TEST_CASE("a standby's dashboard redirect keeps the path and query, and only a path", "[ha]") {
  CHECK(RequestTarget("GET /job?id=job-1 HTTP/1.1\r\nHost: x\r\n\r\n") == "/job?id=job-1");
  CHECK(RequestTarget("GET / HTTP/1.1\r\n\r\n") == "/");
  // An absolute URL or a scheme-relative one would send the browser elsewhere.
  CHECK(RequestTarget("GET http://evil.example/ HTTP/1.1\r\n\r\n") == "/");
  CHECK(RequestTarget("GET //evil.example/x HTTP/1.1\r\n\r\n") == "/");
  // No header may be smuggled into Location.
  CHECK(RequestTarget("GET /a\rLocation:x HTTP/1.1\r\n\r\n") == "/");
  CHECK(RequestTarget("garbage") == "/");
  CHECK(RequestTarget("GET /only-two-words\r\n\r\n") == "/");
}
