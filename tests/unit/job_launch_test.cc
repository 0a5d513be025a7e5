// JobLaunch on its own: what the nodes of an attempt are told (one
// LaunchRanks per node, each rank's environment), what it says when a node
// cannot be reached, and a kill that counts an unreachable node's ranks as
// exited.
#include <catch2/catch.hpp>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/logs/log_store.h"
#include "daemon/head/job_data.h"
#include "daemon/head/job_launch.h"
#include "daemon/head/job_logs.h"
#include "daemon/head/node_table.h"
#include "job_table_fixture.h"

using namespace clusterd;
using namespace clusterd::testing;

namespace {

struct LaunchFixture : JobTableFixture {
  NodeTable nodes{&clock, 2'000'000};
  LogStore logs{""};
  JobData data{nullptr};
  JobLogs job_logs{&clock, config, &table, &nodes, &logs};
  std::map<std::string, std::vector<HeadMessage>> sent;  // by node id
  std::set<std::string> unreachable;                     // node ids without a stream
  JobLaunch launch{config, &nodes, &data, &job_logs, [this](const std::string& node_id, const HeadMessage& m) {
                     if (unreachable.count(node_id)) return false;
                     sent[node_id].push_back(m);
                     return true;
                   }};

  std::string AddNode(const std::string& name, int n) {
    auto node = nodes.Register(Node(name, 4, n));
    REQUIRE(node.ok());
    return (*node)->node_id();
  }

  // A job whose attempt 0 has ranks 0 and 1 on node `a`, rank 2 on `b`.
  TrackedJob& Placed(const std::string& a, const std::string& b) {
    TrackedJob& job = Add(RUNNING, "", 3);
    AttemptInfo* attempt = job.info.add_attempts();
    attempt->set_attempt(0);
    attempt->set_master_addr("10.0.0.1");
    attempt->set_master_port(29500);
    for (int rank = 0; rank < 3; ++rank) {
      RankInfo* info = attempt->add_ranks();
      info->set_rank(rank);
      info->set_node_id(rank < 2 ? a : b);
      info->set_node_rank(rank < 2 ? 0 : 1);
      info->set_local_rank(rank < 2 ? rank : 0);
      RankSlot slot;
      slot.node_id = info->node_id();
      job.run.slots.push_back(slot);
    }
    job.active = true;
    return job;
  }
};

}  // namespace

TEST_CASE("an attempt's ranks are launched with one message per node, each rank with its torchrun environment",
          "[jobs][launch]") {
  LaunchFixture f;
  const std::string a = f.AddNode("a", 1), b = f.AddNode("b", 2);
  TrackedJob& job = f.Placed(a, b);
  REQUIRE(f.launch.Launch(job).empty());
  REQUIRE(f.sent[a].size() == 1);
  REQUIRE(f.sent[b].size() == 1);
  const LaunchRanks& on_a = f.sent[a][0].launch();
  REQUIRE(on_a.job_id() == job.info.job_id());
  REQUIRE(on_a.ranks_size() == 2);
  REQUIRE_FALSE(on_a.pick_master_port());  // the port was reserved: a gang on two nodes
  std::map<std::string, std::string> env(on_a.env().begin(), on_a.env().end());
  for (const auto& [key, value] : on_a.ranks(1).env()) env[key] = value;
  REQUIRE(env["RANK"] == "1");
  REQUIRE(env["WORLD_SIZE"] == "3");
  REQUIRE(env["MASTER_PORT"] == "29500");
  REQUIRE(f.sent[b][0].launch().ranks(0).rank() == 2);
  REQUIRE_FALSE(f.launch.CheckpointsViaStore(job.info.spec()));  // no store: checkpoints stay on the nodes
}

TEST_CASE("a launch says which node it could not reach, and a kill counts that node's ranks as exited",
          "[jobs][launch]") {
  LaunchFixture f;
  const std::string a = f.AddNode("a", 1), b = f.AddNode("b", 2);
  TrackedJob& job = f.Placed(a, b);
  f.unreachable.insert(b);
  REQUIRE(f.launch.Launch(job) == "could not reach node " + b + " to launch ranks");
  f.launch.KillRanks(job);
  REQUIRE(f.sent[a].back().has_kill());
  REQUIRE(f.sent[a].back().kill().attempt() == 0);
  REQUIRE(job.run.exited == std::set<int>{2});  // a's ranks still have to say they ended
}
