// The results scenario (rank_zero_loss.h) with the cluster's store
// in S3 (`--store s3://`): Ceph's radosgw runs on a machine of its own, and
// every other machine reads and writes it with its own credentials. A
// 2-rank MLP on three workers loses rank 0's whole machine after its
// epoch-1 checkpoint; the next attempt resumes at epoch 2 from the
// checkpoint in S3; the client gets model.pt and the DVCLive files, and
// `fetch --checkpoint` the last checkpoint, from S3; the head's disk holds
// only metadata, by its size.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "ceph_fixture.h"
#include "machines.h"
#include "rank_zero_loss.h"

using namespace clusterd;
using namespace clusterd::testing;
namespace fs = std::filesystem;

TEST_CASE("machines: with --store s3:// and radosgw on its own machine, rank 0's machine dies after a checkpoint, "
          "the job resumes from S3 and its results reach the client",
          "[machines][results_machines][ceph][s3]") {
  REQUIRE_SIM_NETWORK();
  SimNetwork net;
  Machine& storage = net.AddMachine("s3");
  Machine& head = net.AddMachine("head");
  std::vector<Machine*> workers = {&net.AddMachine("w1"), &net.AddMachine("w2"), &net.AddMachine("w3")};
  Machine& client = net.AddMachine("client");
  CephPlace place;
  place.wrap = {"/usr/bin/nsenter", "-t", std::to_string(storage.holder()), "-m", "-n", "-u", "--"};
  place.gateway_host = storage.ip();
  place.parent_dir = "/var/tmp";  // the machine's /tmp is its own
  std::string ceph_why_not;
  auto ceph = CephFixture::Start(&ceph_why_not, place);
  if (!ceph) {
    SkipTest("no Ceph radosgw here: " + ceph_why_not);
    return;
  }
  REQUIRE(ceph->CreateBucket("cluster"));
  // Each machine's own credentials (here the same key), none on a command line.
  std::map<std::string, std::string> aws = {{"AWS_ACCESS_KEY_ID", ceph->access_key()},
                                            {"AWS_SECRET_ACCESS_KEY", ceph->secret_key()},
                                            {"AWS_ENDPOINT_URL", ceph->endpoint()}};
  RunResult started = head.Run({"clusterd", "start", "--head", "--port", "6379", "--num-cpus", "0", "--num-gpus", "0",
                                "--state-dir", "/tmp/state", "--store", "s3://cluster/run"}, aws);
  INFO(started.out << started.err);
  REQUIRE(started.exit_code == 0);
  std::string token;
  std::ifstream(head.HostPath("/tmp/clusterd/session_latest/token")) >> token;
  std::map<std::string, std::string> env = aws;
  env.insert({{"CLUSTER_ADDRESS", head.ip() + ":6379"}, {"CLUSTER_TOKEN", token}});
  for (Machine* w : workers) REQUIRE(w->Run({"clusterd", "start", "--address", head.ip() + ":6379", "--num-cpus", "1"}, env).exit_code == 0);
  RunRankZeroLoss({&net, workers, &client, env});

  // The head's disk: journal, logs and token, no blob (a model alone is far larger).
  CHECK_FALSE(fs::exists(head.HostPath("/tmp/state/store")));
  int64_t head_bytes = 0;
  for (const auto& e : fs::recursive_directory_iterator(head.HostPath("/tmp/state"))) {
    if (e.is_regular_file()) head_bytes += static_cast<int64_t>(e.file_size());
  }
  INFO("head state bytes: " << head_bytes);
  CHECK(head_bytes < static_cast<int64_t>(fs::file_size(client.HostPath("/tmp/ckpt/checkpoint_000002/model.pt"))));

  for (Machine* m : {&head, workers[0], workers[1], workers[2]}) m->Run({"clusterd", "stop", "--force"});
}
