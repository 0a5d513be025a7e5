// What the tests against real etcd members share: skipping where etcd is
// not installed, and a client of the members with the timeouts the tests
// are written for.
#pragma once

#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "daemon/ha/etcd_client.h"
#include "etcd_members.h"
#include "test_skip.h"

// Skips the test (returns from it) where etcd-server is not installed.
#define REQUIRE_ETCD()                                                   \
  do {                                                                   \
    std::string etcd_why_not;                                            \
    if (!::clusterd::testing::EtcdMembers::Installed(&etcd_why_not)) {   \
      ::clusterd::testing::SkipTest(etcd_why_not);                       \
      return;                                                            \
    }                                                                    \
  } while (0)

namespace clusterd::testing {

// A client of `members` whose calls give up on a member after 1 s, as
// the tests' bounds assume.
inline std::unique_ptr<EtcdClient> TestEtcdClient(const std::vector<std::string>& members, EtcdTls tls = {}) {
  EtcdClientOptions options;
  options.members = members;
  options.call_timeout_ms = 1000;
  options.tls = std::move(tls);
  auto client = EtcdClient::Create(options);
  REQUIRE(client.ok());
  return std::move(*client);
}

}  // namespace clusterd::testing
