// Issue "results that survive machines", on simulated machines that share
// nothing but the network, with the head's own store (rank_zero_loss.h
// tells the scenario).
#include <catch2/catch.hpp>
#include <fstream>

#include "machines.h"
#include "rank_zero_loss.h"

using namespace clusterd;
using namespace clusterd::testing;

TEST_CASE("machines: rank 0's machine dies after a checkpoint, the job resumes elsewhere from the store and its "
          "results reach the client",
          "[machines][results_machines]") {
  REQUIRE_SIM_NETWORK();
  SimNetwork net;
  Machine& head = net.AddMachine("head");
  std::vector<Machine*> workers = {&net.AddMachine("w1"), &net.AddMachine("w2"), &net.AddMachine("w3")};
  Machine& client = net.AddMachine("client");
  REQUIRE(head.Run({"clusterd", "start", "--head", "--port", "6379", "--num-cpus", "0", "--num-gpus", "0"}).exit_code == 0);
  std::string token;
  std::ifstream(head.HostPath("/tmp/clusterd/session_latest/token")) >> token;
  std::map<std::string, std::string> env = {{"CLUSTER_ADDRESS", head.ip() + ":6379"}, {"CLUSTER_TOKEN", token}};
  for (Machine* w : workers) REQUIRE(w->Run({"clusterd", "start", "--address", head.ip() + ":6379", "--num-cpus", "1"}, env).exit_code == 0);
  RunRankZeroLoss({&net, workers, &client, env});

  for (Machine* m : {&head, workers[0], workers[1], workers[2]}) m->Run({"clusterd", "stop", "--force"});
}
