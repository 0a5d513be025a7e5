// What a node token may fetch from the head's store (docs/SHARING.md,
// "Users and tokens"): the blobs of the jobs running on its nodes, and no
// other; the cluster's token and users' tokens fetch as they always did.
#include <catch2/catch.hpp>

#include <grpcpp/grpcpp.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "common/net/auth.h"
#include "harness.h"
#include "store.grpc.pb.h"
#include "user_tokens.h"

using namespace clusterd;
using namespace clusterd::testing;

namespace {

// A job file that ships `dir` as its package and sleeps on a node that has
// `resource`; its path.
std::string SleeperOn(const Cluster& cluster, const std::string& name, const std::string& resource) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(cluster.temp_dir()) / name;
  fs::create_directories(dir);
  std::ofstream((dir / "code.txt").string()) << "the code of " << name << "\n";
  const std::string path = (dir / "job.yaml").string();
  std::ofstream(path) << "name: " << name << "\nworking_dir: " << dir.string()
                      << "\nentrypoint: ['/bin/sh', '-c', 'sleep 300']\n"
                      << "resources_per_worker: {CPU: 1, " << resource << ": 1}\n";
  return path;
}

std::string SubmittedId(const RunResult& submitted) {
  const std::string marker = "Submitted job ";
  auto at = submitted.out.find(marker);
  REQUIRE(at != std::string::npos);
  at += marker.size();
  return submitted.out.substr(at, submitted.out.find_first_of(" \n", at) - at);
}

// GetBlob of `id` with `token`: the status, and the bytes in *bytes.
// A stub of the head's store, and `context` made to carry `token` with a 20 s deadline.
std::unique_ptr<StoreService::Stub> StoreCall(const Cluster& cluster, const std::string& token,
                                              grpc::ClientContext* context) {
  context->AddMetadata(kTokenMetadataKey, token);
  context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  return StoreService::NewStub(grpc::CreateChannel(cluster.address(), grpc::InsecureChannelCredentials()));
}

grpc::Status Fetch(const Cluster& cluster, const std::string& token, const std::string& id, std::string* bytes) {
  grpc::ClientContext context;
  auto stub = StoreCall(cluster, token, &context);
  GetBlobRequest request;
  request.set_id(id);
  auto reader = stub->GetBlob(&context, request);
  BlobChunk chunk;
  bytes->clear();
  while (reader->Read(&chunk)) *bytes += chunk.data();
  return reader->Finish();
}

// StatBlob of `id` with `token`, flagged as received corrupt.
grpc::Status FlagSuspect(const Cluster& cluster, const std::string& token, const std::string& id, BlobInfo* info) {
  grpc::ClientContext context;
  auto stub = StoreCall(cluster, token, &context);
  BlobId request;
  request.set_id(id);
  request.set_suspect(true);
  return stub->StatBlob(&context, request, info);
}

}  // namespace

TEST_CASE("a node token fetches the blobs of the jobs on its node and no other, and users' tokens fetch as before",
          "[users][store]") {
  Cluster cluster;
  REQUIRE(cluster.StartHead({"--node-ip-address", "127.0.0.1", "--num-cpus", "1", "--resources", R"({"on_head": 1})"})
              .exit_code == 0);
  RunResult made = cluster.Ctl({"token", "create", "--node", "--json"});
  INFO(made.err);
  REQUIRE(made.exit_code == 0);
  const std::string node_token = JsonString(made.out, "token");
  const std::string node_token_id = JsonString(made.out, "id");
  REQUIRE(!node_token.empty());
  REQUIRE(node_token_id == "nodetoken-0001");
  REQUIRE(cluster.StartWorker("w1", {"--num-cpus", "1", "--resources", R"({"on_w1": 1})", "--token", node_token})
              .exit_code == 0);
  REQUIRE(WaitFor([&] { return cluster.StateOf("w1") == ALIVE; }, std::chrono::seconds(20),
                  std::chrono::milliseconds(100)));
  const std::string alice = AddUser(cluster, "alice");
  const std::string bob = AddUser(cluster, "bob");

  RunResult submitted_w1 = cluster.Ctl({"submit", SleeperOn(cluster, "on-w1", "on_w1"), "--token", alice});
  INFO(submitted_w1.err);
  REQUIRE(submitted_w1.exit_code == 0);
  const std::string on_w1 = SubmittedId(submitted_w1);
  RunResult submitted_head = cluster.Ctl({"submit", SleeperOn(cluster, "on-head", "on_head"), "--token", alice});
  REQUIRE(submitted_head.exit_code == 0);
  const std::string on_head = SubmittedId(submitted_head);
  auto running = [&](const std::string& job) {
    return cluster.Ctl({"job", job, "--json"}).out.find("\"state\":\"RUNNING\"") != std::string::npos;
  };
  REQUIRE(WaitFor([&] { return running(on_w1) && running(on_head); }, std::chrono::seconds(60),
                  std::chrono::milliseconds(200)));
  const std::string w1_package = JsonString(cluster.Ctl({"job", on_w1, "--json"}).out, "package_id");
  const std::string head_package = JsonString(cluster.Ctl({"job", on_head, "--json"}).out, "package_id");
  REQUIRE(w1_package.size() == 64);
  REQUIRE(head_package.size() == 64);

  std::string bytes;
  // The package of the job on its node: what the worker fetched to run it.
  grpc::Status own = Fetch(cluster, node_token, w1_package, &bytes);
  INFO(own.error_message());
  CHECK(own.ok());
  CHECK(!bytes.empty());
  // Another job's, on another node: refused, naming the rule, not the owner.
  grpc::Status other = Fetch(cluster, node_token, head_package, &bytes);
  CHECK(other.error_code() == grpc::StatusCode::PERMISSION_DENIED);
  CHECK(other.error_message() == "node token nodetoken-0001 may fetch only the blobs of the jobs running on its nodes "
                                 "(their packages and checkpoints); blob " + head_package + " is not one of them");
  CHECK(other.error_message().find("alice") == std::string::npos);
  CHECK(bytes.empty());
  // It may flag as corrupt only what it may fetch: a flag makes the head
  // hash its copy again. The intact package stays.
  BlobInfo info;
  grpc::Status flagged_own = FlagSuspect(cluster, node_token, w1_package, &info);
  INFO(flagged_own.error_message());
  CHECK(flagged_own.ok());
  CHECK(info.present());
  grpc::Status flagged_other = FlagSuspect(cluster, node_token, head_package, &info);
  CHECK(flagged_other.error_code() == grpc::StatusCode::PERMISSION_DENIED);
  CHECK(flagged_other.error_message().find("may fetch only the blobs of the jobs running on its nodes") !=
        std::string::npos);
  // Users' tokens and the cluster's fetch as before: a blob id is the key.
  CHECK(Fetch(cluster, bob, head_package, &bytes).ok());
  CHECK(Fetch(cluster, alice, head_package, &bytes).ok());
  CHECK(Fetch(cluster, cluster.Token(), head_package, &bytes).ok());

  // Once the job's ranks are gone from the node, so is its access.
  REQUIRE(cluster.Ctl({"stop", on_w1}).exit_code == 0);
  REQUIRE(WaitFor([&] { return cluster.Ctl({"job", on_w1, "--json"}).out.find("\"state\":\"STOPPED\"") !=
                               std::string::npos; },
                  std::chrono::seconds(30), std::chrono::milliseconds(200)));
  CHECK(Fetch(cluster, node_token, w1_package, &bytes).error_code() == grpc::StatusCode::PERMISSION_DENIED);
}
