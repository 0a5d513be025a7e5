// daemon/ha/etcd_endpoints.h: the --ha URL's members and prefix, and a clear
// error naming what is wrong in a malformed one.
#include <catch2/catch.hpp>

#include "daemon/ha/etcd_client.h"
#include "daemon/ha/etcd_endpoints.h"

using namespace clusterd;

namespace {

std::string ErrorOf(const std::string& url) {
  EtcdEndpoints endpoints;
  Status status = ParseEtcdEndpoints(url, &endpoints);
  REQUIRE_FALSE(status.ok());
  CHECK(status.code() == Status::Code::kInvalidArgument);
  return status.message();
}

}  // namespace

TEST_CASE("etcd endpoints: members in order, and the prefix without a trailing slash", "[etcd_endpoints]") {
  EtcdEndpoints endpoints;
  REQUIRE(ParseEtcdEndpoints("etcd://e1:2379,10.0.0.2:2379,[::1]:2380/clusterd/prod/", &endpoints).ok());
  CHECK(endpoints.members == std::vector<std::string>{"e1:2379", "10.0.0.2:2379", "[::1]:2380"});
  CHECK(endpoints.prefix == "/clusterd/prod");

  REQUIRE(ParseEtcdEndpoints("etcd://127.0.0.1:2379", &endpoints).ok());
  CHECK(endpoints.members == std::vector<std::string>{"127.0.0.1:2379"});
  CHECK(endpoints.prefix.empty());
}

TEST_CASE("etcd endpoints: a malformed URL names the part that is wrong", "[etcd_endpoints]") {
  CHECK_THAT(ErrorOf("http://e1:2379"), Catch::Contains("must start with etcd://"));
  CHECK_THAT(ErrorOf("etcd://"), Catch::Contains("names no member"));
  CHECK_THAT(ErrorOf("etcd:///prefix"), Catch::Contains("names no member"));
  CHECK_THAT(ErrorOf("etcd://e1"), Catch::Contains("member 'e1' has no :PORT"));
  CHECK_THAT(ErrorOf("etcd://e1:2379,,e2:2379"), Catch::Contains("an empty member"));
  CHECK_THAT(ErrorOf("etcd://e1:23x9"), Catch::Contains("port '23x9', which is not a number"));
  CHECK_THAT(ErrorOf("etcd://e1:70000"), Catch::Contains("port 70000, outside 1-65535"));
  CHECK_THAT(ErrorOf("etcd://e1:0"), Catch::Contains("outside 1-65535"));
  CHECK_THAT(ErrorOf("etcd://e 1:2379"), Catch::Contains("member 'e 1:2379' has no valid host name"));
  CHECK_THAT(ErrorOf("etcd://[::1:2379"), Catch::Contains("never closes it"));
  CHECK_THAT(ErrorOf("etcd://[::1]2379"), Catch::Contains("has no :PORT after its address"));
  CHECK_THAT(ErrorOf("etcd://e1:2379,e1:2379"), Catch::Contains("member 'e1:2379' is listed twice"));
  CHECK_THAT(ErrorOf("etcd://e1:2379/a//b"), Catch::Contains("has an empty part"));
}

TEST_CASE("etcd prefix end: the first key past every key under the prefix", "[etcd_endpoints]") {
  CHECK(EtcdPrefixEnd("/clusterd/") == "/clusterd0");
  CHECK(EtcdPrefixEnd("a\xff") == "b");
  CHECK(EtcdPrefixEnd("\xff\xff") == std::string(1, '\0'));
  CHECK(EtcdPrefixEnd("") == std::string(1, '\0'));
}

TEST_CASE("etcd client: TLS options that cannot work are refused, naming the file or flag", "[etcd_endpoints]") {
  EtcdClientOptions options;
  options.members = {"127.0.0.1:2379"};
  options.tls.cert_file = "/nonexistent/client.pem";
  options.tls.key_file = "/nonexistent/client.key";
  auto client = EtcdClient::Create(options);
  REQUIRE_FALSE(client.ok());
  CHECK_THAT(client.status().message(), Catch::Contains("without a CA (--ha-ca)"));

  options.tls.ca_file = "/nonexistent/ca.pem";
  client = EtcdClient::Create(options);
  REQUIRE_FALSE(client.ok());
  CHECK_THAT(client.status().message(), Catch::Contains("cannot read the CA certificate /nonexistent/ca.pem"));

  options.tls.key_file.clear();
  client = EtcdClient::Create(options);
  REQUIRE_FALSE(client.ok());
  CHECK_THAT(client.status().message(), Catch::Contains("certificate was given without its key (--ha-key)"));

  options.members.clear();
  client = EtcdClient::Create(options);
  REQUIRE_FALSE(client.ok());
  CHECK_THAT(client.status().message(), Catch::Contains("no member given"));
}
