// Jobs whose code travels as a package, and gangs that span machines, driven
// through HeadCore with fake agents: the package must be in the store and is
// held while the job lives; nodes are told the package, not a path; ranks
// learn their node's address; a loopback address never spans machines;
// rank 0's node is told how to keep the job's checkpoints.
#include <catch2/catch.hpp>

#include "blob_store_dir.h"
#include "common/jobspec/job_spec.h"
#include "common/sha256.h"
#include "head_harness.h"

using namespace clusterd;
using namespace clusterd::testing;

namespace {

SubmitJobRequest Shipped(Harness& h, const std::string& package_id) {
  SubmitJobRequest request = h.Request(2, 1, STRICT_SPREAD);
  request.mutable_spec()->set_working_dir("/home/me/project");  // on the submitter's machine only
  request.mutable_spec()->set_working_dir_mode(SHIP);
  request.mutable_spec()->set_package_id(package_id);
  request.mutable_spec()->set_package_bytes(1234);
  return request;
}

}  // namespace

TEST_CASE("a shipped job names its package to the nodes and holds it in the store while it lives", "[jobs][shipping]") {
  BlobStoreDir store;
  Harness h(store.blobs.get());
  h.AddNode("w1", 1);
  h.AddNode("w2", 1);
  std::string package = store.Put("tar bytes");

  auto id = h.head->jobs().Submit(Shipped(h, package));
  REQUIRE(id.ok());
  REQUIRE(store.blobs->IsPinned(package));
  h.AnswerPort("w1", 29500);
  for (const std::string node : {"w1", "w2"}) {
    auto launches = h.Launches(node);
    REQUIRE(launches.size() == 1);
    REQUIRE(launches[0].package_id() == package);
    REQUIRE(launches[0].package_bytes() == 1234);
    REQUIRE(launches[0].working_dir().empty());  // the node makes its own
    auto env = EnvOf(launches[0], 0);
    // Relative: the agent resolves it inside the folder it unpacked.
    REQUIRE(env["CLUSTER_CHECKPOINT_DIR"] == "checkpoints/" + *id);
  }
  REQUIRE(EnvOf(h.Launches("w1")[0], 0)["CLUSTER_NODE_IP"] == "10.0.0.1");
  REQUIRE(EnvOf(h.Launches("w2")[0], 0)["CLUSTER_NODE_IP"] == "10.0.0.2");
  REQUIRE(EnvOf(h.Launches("w2")[0], 0)["MASTER_ADDR"] == "10.0.0.1");

  h.Exit("w1", *id, 0, 0, 0);
  h.Exit("w2", *id, 0, 1, 0);
  REQUIRE(h.Job(*id).state() == SUCCEEDED);
  REQUIRE_FALSE(store.blobs->IsPinned(package));  // free to be evicted now
}

TEST_CASE("a shipped job is refused unless its package is in the store", "[jobs][shipping]") {
  BlobStoreDir store;
  Harness h(store.blobs.get());
  h.AddNode("w1", 2);
  auto missing = h.head->jobs().Submit(Shipped(h, Sha256Hex("never uploaded")));
  REQUIRE(missing.status().code() == Status::Code::kFailedPrecondition);
  REQUIRE(missing.status().message().find("is not in the head's store") != std::string::npos);

  SubmitJobRequest no_package = Shipped(h, "");
  auto refused = h.head->jobs().Submit(no_package);
  REQUIRE(refused.status().code() == Status::Code::kInvalidArgument);
  REQUIRE(refused.status().message().find("names no package") != std::string::npos);

  SubmitJobRequest garbage = Shipped(h, "../../etc/passwd");
  REQUIRE(h.head->jobs().Submit(garbage).status().code() == Status::Code::kInvalidArgument);

  // Nothing refused was numbered: the next job is the first.
  REQUIRE(h.Submit(1, 1, PACK) == "job-0001");
}

TEST_CASE("the head records where a node's stream comes from", "[jobs][addresses]") {
  Harness h;
  h.head->set_local_addresses({"127.0.0.1", "10.0.0.100"});
  h.AddNode("w1", 1, 0, "10.0.0.1", "ipv4:10.0.0.1:40000");
  h.AddNode("liar", 1, 0, "10.9.9.9", "ipv4:10.0.0.2:40000");
  h.AddNode("local", 1, 0, "10.0.0.100", "ipv4:127.0.0.1:40000");
  std::map<std::string, NodeInfo> nodes;
  ClusterStatus status = h.head->GetStatus();
  for (const auto& node : status.nodes()) nodes[node.name()] = node;
  REQUIRE(nodes["w1"].observed_address() == "10.0.0.1");
  REQUIRE(nodes["liar"].address() == "10.9.9.9");  // logged, kept: the operator may know better
  REQUIRE(nodes["liar"].observed_address() == "10.0.0.2");
  REQUIRE(nodes["local"].observed_address() == "127.0.0.1");
  REQUIRE(h.head->nodes().MachineOf(nodes["local"].node_id()).empty());  // the head's own machine
  REQUIRE(h.head->nodes().MachineOf(nodes["w1"].node_id()) == "10.0.0.1");
}

TEST_CASE("a gang spanning machines waits, naming the node, rather than run with a loopback MASTER_ADDR", "[jobs][addresses]") {
  Harness h;
  h.head->set_local_addresses({"127.0.0.1", "10.0.0.100"});
  // Two machines that each registered as 127.0.0.1 (the old default).
  h.AddNode("w1", 1, 0, "127.0.0.1", "ipv4:10.0.0.1:40000");
  h.AddNode("w2", 1, 0, "127.0.0.1", "ipv4:10.0.0.2:40000");
  std::string id = h.Submit(2, 1, STRICT_SPREAD);
  JobInfo job = h.Job(id);
  REQUIRE(job.state() == PENDING);
  REQUIRE(job.reason().find("node") != std::string::npos);
  REQUIRE(job.reason().find("w1 (127.0.0.1)") != std::string::npos);
  REQUIRE(h.Launches("w1").empty());
  // A routable node joins: the gang still cannot use w1 or w2 with a second
  // machine, so it goes to the routable ones once there are two.
  h.AddNode("w3", 1, 0, "10.0.0.3", "ipv4:10.0.0.3:40000");
  h.AddNode("w4", 1, 0, "10.0.0.4", "ipv4:10.0.0.4:40000");
  REQUIRE(h.Job(id).state() == RUNNING);
  REQUIRE(h.Job(id).attempts(0).master_addr() == "10.0.0.3");
}

TEST_CASE("a local cluster on loopback runs gangs across its nodes", "[jobs][addresses]") {
  Harness h;
  h.head->set_local_addresses({"127.0.0.1"});
  h.AddNode("head", 1, 0, "127.0.0.1", "ipv4:127.0.0.1:40000");
  h.AddNode("w1", 1, 0, "127.0.0.1", "ipv4:127.0.0.1:40001");
  std::string id = h.Submit(2, 1, STRICT_SPREAD);
  REQUIRE(h.Job(id).state() == RUNNING);
  REQUIRE(h.Job(id).attempts(0).master_addr() == "127.0.0.1");
}

TEST_CASE("the head refuses passthrough variables that are clusterd's or that no pattern asked for", "[jobs]") {
  Harness h;
  h.AddNode("a", 1);
  SubmitJobRequest request = h.Request(1, 1, PACK);
  request.mutable_spec()->add_env_passthrough("*");
  (*request.mutable_passthrough_env())["CLUSTER_TOKEN"] = "stolen";
  auto refused = h.head->jobs().Submit(request);
  REQUIRE(refused.status().code() == Status::Code::kInvalidArgument);
  REQUIRE(refused.status().message() == "passthrough variable CLUSTER_TOKEN is set by clusterd and cannot be passed");
  request.mutable_passthrough_env()->clear();
  request.mutable_spec()->clear_env_passthrough();
  request.mutable_spec()->add_env_passthrough("DVC_*");
  (*request.mutable_passthrough_env())["HOME"] = "/root";
  REQUIRE(h.head->jobs().Submit(request).status().message() ==
          "passthrough variable HOME matches no env_passthrough pattern");
  request.mutable_passthrough_env()->clear();
  (*request.mutable_passthrough_env())["DVC_EXP"] = "1";
  REQUIRE(h.head->jobs().Submit(request).ok());
}

TEST_CASE("a node's launch carries what its ranks share once, not once per rank", "[jobs]") {
  Harness h;
  h.AddNode("big", 1000);
  SubmitJobRequest request = h.Request(1000, 1, PACK);
  for (int i = 0; i < 50; ++i) (*request.mutable_spec()->mutable_env())["VAR_" + std::to_string(i)] = std::string(1024, 'x');
  auto id = h.head->jobs().Submit(request);
  REQUIRE(id.ok());
  h.AnswerPort("big", 1);
  LaunchRanks launch = h.Launches("big").at(0);
  REQUIRE(launch.env().at("VAR_7") == std::string(1024, 'x'));
  REQUIRE(launch.ranks(5).env().count("VAR_7") == 0);
  REQUIRE(EnvOf(launch, 5)["RANK"] == "5");
  REQUIRE(EnvOf(launch, 5)["VAR_7"] == std::string(1024, 'x'));
  // 1000 ranks x 50 KiB was 50 MB, past the agent's 4 MiB message limit.
  REQUIRE(launch.ByteSizeLong() < (1u << 20));
}

TEST_CASE("a one-rank launch carries all of its rank's environment as shared", "[jobs]") {
  Harness h;
  h.AddNode("n1", 4);
  SubmitJobRequest request = h.Request(1, 1, PACK);
  (*request.mutable_spec()->mutable_env())["MODE"] = "solo";
  REQUIRE(h.head->jobs().Submit(request).ok());
  h.AnswerPort("n1", 1);
  LaunchRanks launch = h.Launches("n1").at(0);
  REQUIRE(launch.ranks_size() == 1);
  REQUIRE(launch.ranks(0).env().empty());
  REQUIRE(launch.env().at("MODE") == "solo");
  REQUIRE(launch.env().at("RANK") == "0");
  REQUIRE(EnvOf(launch, 0)["WORLD_SIZE"] == "1");
}

TEST_CASE("checkpoint.storage: shared copies nothing: no upload asked, nothing restored", "[jobs][results]") {
  BlobStoreDir store;
  Harness h(store.blobs.get());
  h.AddNode("a", 1);
  h.AddNode("b", 1);
  SubmitJobRequest request = h.Request(2, 1, STRICT_SPREAD, 1);
  request.mutable_spec()->mutable_checkpoint()->set_storage("shared");
  request.mutable_spec()->mutable_checkpoint()->set_dir("/nfs/checkpoints");
  auto id = h.head->jobs().Submit(request);
  REQUIRE(id.ok());
  h.AnswerPort("a", 1);
  LaunchRanks launch = h.Launches("a")[0];
  REQUIRE_FALSE(launch.store_checkpoints());
  REQUIRE(launch.checkpoint_upload_bytes_per_s() == 0);
  REQUIRE_FALSE(launch.has_restore());
  REQUIRE(EnvOf(launch, 0)["CLUSTER_CHECKPOINT_DIR"] == "/nfs/checkpoints");
}

TEST_CASE("rank 0's node is told the job's checkpoint upload rate", "[jobs][results]") {
  BlobStoreDir store;
  Harness h(store.blobs.get());
  h.AddNode("a", 2);
  SubmitJobRequest request = h.Request(1, 1, PACK, 1);
  request.mutable_spec()->mutable_checkpoint()->set_upload_bytes_per_s(0);  // upload_rate: unlimited
  REQUIRE(h.head->jobs().Submit(request).ok());
  request.mutable_spec()->mutable_checkpoint()->set_upload_bytes_per_s(int64_t{250} << 20);
  REQUIRE(h.head->jobs().Submit(request).ok());
  auto launches = h.Launches("a");
  REQUIRE(launches.size() == 2);
  CHECK(launches[0].store_checkpoints());
  CHECK(launches[0].checkpoint_upload_bytes_per_s() == 0);
  CHECK(launches[1].checkpoint_upload_bytes_per_s() == (int64_t{250} << 20));
}
