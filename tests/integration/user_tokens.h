// Users on a real head for the integration tests (docs/SHARING.md "Users
// and tokens"): a new user's token, made by the admin's clusterctl.
#pragma once

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "harness.h"

namespace clusterd::testing {

// The value of "key":"VALUE" in one line of JSON.
inline std::string JsonString(const std::string& json, const std::string& key) {
  const std::string marker = "\"" + key + "\":\"";
  auto at = json.find(marker);
  if (at == std::string::npos) return "";
  at += marker.size();
  return json.substr(at, json.find('"', at) - at);
}

// A new user's token (the admin's clusterctl makes it, --json).
inline std::string AddUser(Cluster& cluster, const std::string& name, const std::vector<std::string>& flags = {}) {
  std::vector<std::string> args = {"user", "add", name, "--json"};
  args.insert(args.end(), flags.begin(), flags.end());
  RunResult added = cluster.Ctl(args);
  INFO(added.err);
  REQUIRE(added.exit_code == 0);
  const std::string token = JsonString(added.out, "token");
  REQUIRE(token.size() >= 64);
  return token;
}

}  // namespace clusterd::testing
