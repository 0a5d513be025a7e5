// RankSpawnPlanner (daemon/agent/rank_spawn_planner.h): what each rank of a
// launch is started with. No processes.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "common/file_util.h"
#include "daemon/agent/rank_environment.h"
#include "daemon/agent/rank_spawn_planner.h"
#include "temp_tree.h"

using namespace clusterd;
using namespace clusterd::testing;

namespace {

std::string Env(const SpawnRequest& request, const std::string& key) {
  return std::string(EnvironmentValue(request.env, key).value_or("<unset>"));
}

LaunchRanks TwoRanks() {
  LaunchRanks launch;
  launch.set_job_id("job-1");
  launch.set_attempt(2);
  launch.add_argv("python3");
  launch.add_argv("train.py");
  launch.set_working_dir("/srv/work");
  (*launch.mutable_env())["WORLD_SIZE"] = "2";
  for (int r = 0; r < 2; ++r) {
    RankLaunch* rank = launch.add_ranks();
    rank->set_rank(r);
    (*rank->mutable_env())["RANK"] = std::to_string(r);
  }
  return launch;
}

}  // namespace

TEST_CASE("each rank of a launch is planned with the job's and its own variables, the agent's socket and the port",
          "[rank_spawn_planner]") {
  TempTree t;
  t.Write("logs/.keep", "");
  RankSpawnPlanner planner({t.Path("logs"), "/run/agent.sock", "/opt/clusterd/python", "127.0.0.1", ""});
  LaunchRanks launch = TwoRanks();
  launch.set_config_json(R"({"lr": 0.1})");
  auto requests = planner.Plan(launch, 29500);
  REQUIRE(requests.size() == 2);
  for (int r = 0; r < 2; ++r) {
    INFO("rank " << r);
    const SpawnRequest& request = requests[r];
    CHECK(request.argv == std::vector<std::string>{"python3", "train.py"});
    CHECK(request.working_dir == "/srv/work");
    CHECK(request.attempt == "job-1.attempt-2");
    CHECK(request.output_fd == -1);
    CHECK(Env(request, "RANK") == std::to_string(r));
    CHECK(Env(request, "WORLD_SIZE") == "2");
    CHECK(Env(request, "MASTER_PORT") == "29500");
    CHECK(Env(request, "CLUSTER_AGENT_SOCKET") == "/run/agent.sock");
    CHECK(Env(request, "CLUSTER_WORKING_DIR") == "/srv/work");
    CHECK(Env(request, "PYTHONPATH").rfind("/opt/clusterd/python", 0) == 0);
    CHECK(Env(request, "CLUSTER_CONFIG") == R"({"lr": 0.1})");
  }
  // The config as a file too, for configs too large for the environment.
  const std::string config_file = Env(requests[0], "CLUSTER_CONFIG_FILE");
  CHECK(config_file == t.Path("logs/job-1.attempt-2.config.json"));
  // Where a preemption notice to the attempt would lie, beside it (preemption_notice.h).
  CHECK(Env(requests[0], "CLUSTER_PREEMPTION_FILE") == t.Path("logs/job-1.attempt-2.preemption"));
  CHECK(Env(requests[1], "CLUSTER_PREEMPTION_FILE") == t.Path("logs/job-1.attempt-2.preemption"));
  CHECK(ReadWholeFile(config_file).value_or("") == "{\"lr\": 0.1}\n");
}

TEST_CASE("a launch without a config shares one empty config file, and no MASTER_PORT is made up",
          "[rank_spawn_planner]") {
  TempTree t;
  t.Write("logs/.keep", "");
  RankSpawnPlanner planner({t.Path("logs"), "/run/agent.sock", "", "127.0.0.1", "nobody"});
  auto requests = planner.Plan(TwoRanks(), 0);
  REQUIRE(requests.size() == 2);
  CHECK(Env(requests[0], "CLUSTER_CONFIG_FILE") == t.Path("logs/empty-config.json"));
  CHECK(Env(requests[1], "CLUSTER_CONFIG_FILE") == t.Path("logs/empty-config.json"));
  CHECK(t.Read("logs/empty-config.json") == "{}\n");
  CHECK(EnvironmentValue(requests[0].env, "MASTER_PORT").value_or("<unset>") ==
        EnvironmentValue(AgentEnvironment(), "MASTER_PORT").value_or("<unset>"));
  // The node's run_as, where the job names no user.
  CHECK(requests[0].run_as == "nobody");
  CHECK_FALSE(requests[0].run_as_asked_by_job);
}

TEST_CASE("a free port is one the node's address can bind", "[rank_spawn_planner]") {
  RankSpawnPlanner planner({"/nonexistent", "", "", "127.0.0.1", ""});
  const int port = planner.FreePort();
  CHECK(port > 0);
  CHECK(port < 65536);
}
