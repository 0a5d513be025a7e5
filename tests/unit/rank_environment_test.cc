// A rank's environment: the agent's own, less the cluster token, with the
// launch's keys set over it.
#include <stdlib.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "daemon/agent/rank_environment.h"

using namespace clusterd;

TEST_CASE("a launch's keys replace the agent's and the rest of the agent's environment is kept in its order",
          "[rank_environment]") {
  const std::vector<std::string> agent = {"PATH=/usr/bin", "HOME=/root", "RANK=agent", "LANG=C.UTF-8"};
  const EnvOverrides launch = {{"RANK", "3"}, {"WORLD_SIZE", "4"}, {"EMPTY", ""}};
  REQUIRE(MergeEnvironment(agent, launch) ==
          std::vector<std::string>{"PATH=/usr/bin", "HOME=/root", "LANG=C.UTF-8", "EMPTY=", "RANK=3", "WORLD_SIZE=4"});
  REQUIRE(MergeEnvironment(agent, {}) == agent);
  REQUIRE(MergeEnvironment({}, {{"A", "x=y"}}) == std::vector<std::string>{"A=x=y"});
}

TEST_CASE("a variable's value is found by its whole name only", "[rank_environment]") {
  const std::vector<std::string> env = {"MASTER_PORT_X=1", "MASTER=2", "MASTER_PORT=29500", "EMPTY="};
  REQUIRE(EnvironmentValue(env, "MASTER_PORT") == std::optional<std::string_view>("29500"));
  REQUIRE(EnvironmentValue(env, "MASTER") == std::optional<std::string_view>("2"));
  REQUIRE(EnvironmentValue(env, "EMPTY") == std::optional<std::string_view>(""));
  REQUIRE_FALSE(EnvironmentValue(env, "MASTER_POR").has_value());
  REQUIRE_FALSE(EnvironmentValue(env, "PORT").has_value());
}

TEST_CASE("the agent's environment reaches ranks without the cluster token", "[rank_environment]") {
  setenv("CLUSTER_TOKEN", "secret-token", 1);
  setenv("CLUSTERD_RANK_ENV_TEST", "kept", 1);
  const std::vector<std::string> env = AgentEnvironment();
  unsetenv("CLUSTER_TOKEN");
  unsetenv("CLUSTERD_RANK_ENV_TEST");
  REQUIRE_FALSE(EnvironmentValue(env, "CLUSTER_TOKEN").has_value());
  REQUIRE(EnvironmentValue(env, "CLUSTERD_RANK_ENV_TEST") == std::optional<std::string_view>("kept"));
  for (const std::string& entry : env) REQUIRE(entry.find("secret-token") == std::string::npos);
}
