#include <catch2/catch.hpp>

#include "common/net/net_address.h"
#include "common/session.h"

using namespace clusterd;

TEST_CASE("loopback addresses are recognised", "[net]") {
  CHECK(IsLoopbackAddress("127.0.0.1"));
  CHECK(IsLoopbackAddress("127.0.1.1"));
  CHECK(IsLoopbackAddress("::1"));
  CHECK(IsLoopbackAddress("localhost"));
  CHECK_FALSE(IsLoopbackAddress("10.0.0.1"));
  CHECK_FALSE(IsLoopbackAddress("172.16.0.127"));
  CHECK_FALSE(IsLoopbackAddress(""));
}

TEST_CASE("a gRPC peer string gives its IP", "[net]") {
  CHECK(PeerIp("ipv4:10.213.0.11:43210") == "10.213.0.11");
  CHECK(PeerIp("ipv4:127.0.0.1:1") == "127.0.0.1");
  CHECK(PeerIp("ipv6:[::1]:5555") == "::1");
  CHECK(PeerIp("ipv6:%5B::1%5D:5555") == "::1");
  CHECK(PeerIp("unix:/tmp/socket").empty());
  CHECK(PeerIp("").empty());
}

TEST_CASE("the route toward loopback starts at loopback, and lo holds it", "[net]") {
  auto local = LocalAddressToward("127.0.0.1", 6379);
  REQUIRE(local.ok());
  CHECK(*local == "127.0.0.1");
  CHECK(InterfaceOf("127.0.0.1") == "lo");
  CHECK(InterfaceOf("192.0.2.77").empty());  // TEST-NET-1: on no interface here
  auto bad = LocalAddressToward("no-such-host.invalid", 1);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("no-such-host.invalid") != std::string::npos);
}

TEST_CASE("the primary address is one of this machine's, not loopback", "[net]") {
  auto primary = PrimaryAddress();
  if (!primary.ok()) {
    WARN("no primary address on this machine: " << primary.status().message());
    return;
  }
  CHECK_FALSE(IsLoopbackAddress(*primary));
  auto all = LocalAddresses();
  CHECK(std::find(all.begin(), all.end(), *primary) != all.end());
  CHECK_FALSE(InterfaceOf(*primary).empty());
}

TEST_CASE("HOST:PORT parses, with an IPv6 host in brackets, and prints back as given", "[net]") {
  auto v4 = ParseHostPort("10.0.0.1:6379");
  REQUIRE(v4.ok());
  CHECK(v4->host == "10.0.0.1");
  CHECK(v4->port == 6379);
  CHECK(v4->ToString() == "10.0.0.1:6379");
  auto v6 = ParseHostPort("[::1]:6379");
  REQUIRE(v6.ok());
  CHECK(v6->host == "::1");
  CHECK(v6->ToString() == "[::1]:6379");
  CHECK(ParseHostPort("head:6379")->ToString() == "head:6379");
  CHECK_FALSE(ParseHostPort("head").ok());
  CHECK_FALSE(ParseHostPort("head:70000").ok());
}
