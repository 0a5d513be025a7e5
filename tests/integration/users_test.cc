// Users, tokens and ownership on a real head (docs/SHARING.md, "Users and
// tokens"): two users cannot stop, delete or read the logs of each other's
// jobs and an admin can; removing a user refuses their next call; a worker
// joins with a node token that can do nothing else, and a user's token
// cannot register a node; the HTTP API and the dashboard obey the same rules.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include "harness.h"
#include "http_get.h"
#include "user_tokens.h"

using namespace clusterd;
using namespace clusterd::testing;

namespace {

// clusterctl as the holder of `token`.
RunResult As(Cluster& cluster, const std::string& token, std::vector<std::string> args) {
  args.insert(args.end(), {"--token", token});
  return cluster.Ctl(args);
}

// A job that sleeps until stopped; its file's path.
std::string SleeperFile(const Cluster& cluster) {
  const std::string path = cluster.temp_dir() + "/sleeper.yaml";
  std::ofstream(path) << "name: sleeper\nworking_dir: " << cluster.temp_dir() << "\nworking_dir_mode: shared\n"
                      << "entrypoint: ['/bin/sh', '-c', 'echo hello from the sleeper; sleep 300']\n"
                      << "resources_per_worker: {CPU: 1}\n";
  return path;
}

// Submits as `token`; the new job's id.
std::string Submit(Cluster& cluster, const std::string& token, const std::string& file) {
  RunResult submitted = As(cluster, token, {"submit", file});
  INFO(submitted.err);
  REQUIRE(submitted.exit_code == 0);
  const std::string marker = "Submitted job ";
  auto at = submitted.out.find(marker);
  REQUIRE(at != std::string::npos);
  at += marker.size();
  return submitted.out.substr(at, submitted.out.find_first_of(" \n", at) - at);
}

}  // namespace

TEST_CASE("two users cannot stop, delete or read each other's jobs, but the owner and an admin can", "[users]") {
  Cluster cluster;
  REQUIRE(cluster.StartHead({"--node-ip-address", "127.0.0.1", "--num-cpus", "2"}).exit_code == 0);
  const std::string alice = AddUser(cluster, "alice", {"--group", "team-a"});
  const std::string bob = AddUser(cluster, "bob");
  const std::string file = SleeperFile(cluster);
  const std::string job = Submit(cluster, alice, file);

  RunResult stop = As(cluster, bob, {"stop", job});
  CHECK(stop.exit_code != 0);
  CHECK(stop.err == "clusterctl: " + job + " belongs to alice; bob may not stop it\n");
  RunResult logs = As(cluster, bob, {"logs", job});
  CHECK(logs.exit_code != 0);
  CHECK(logs.err.find(job + " belongs to alice; bob may not read its logs") != std::string::npos);
  RunResult remove = As(cluster, bob, {"delete", job});
  CHECK(remove.exit_code != 0);
  CHECK(remove.err.find(job + " belongs to alice; bob may not delete it") != std::string::npos);

  // Everyone sees the queue, with owners.
  RunResult listed = As(cluster, bob, {"jobs"});
  INFO(listed.out);
  REQUIRE(listed.exit_code == 0);
  CHECK(listed.out.find("OWNER") != std::string::npos);
  CHECK(listed.out.find("alice") != std::string::npos);
  RunResult detail = As(cluster, bob, {"job", job});
  CHECK(detail.out.find("owner:        alice") != std::string::npos);

  // The owner reads and stops it; an admin deletes it.
  CHECK(As(cluster, alice, {"logs", job}).exit_code == 0);
  RunResult stopped = As(cluster, alice, {"stop", job});
  INFO(stopped.err);
  CHECK(stopped.exit_code == 0);
  const std::string bobs = Submit(cluster, bob, file);
  CHECK(As(cluster, bob, {"whoami"}).out == "bob\n");
  CHECK(As(cluster, alice, {"whoami"}).out == "alice, groups team-a\n");
  RunResult by_admin = cluster.Ctl({"stop", bobs});  // the head's token: the admin's
  INFO(by_admin.err);
  CHECK(by_admin.exit_code == 0);
  WaitFor([&] { return cluster.Ctl({"delete", job}).exit_code == 0; }, std::chrono::seconds(20),
          std::chrono::milliseconds(100));
  CHECK(cluster.Ctl({"job", job}).exit_code != 0);  // deleted

  // User commands are an admin's.
  RunResult not_admin = As(cluster, alice, {"user", "add", "mallory"});
  CHECK(not_admin.err == "clusterctl: user add is for admins; alice is not one\n");
  CHECK(As(cluster, alice, {"user", "list"}).err == "clusterctl: user list is for admins; alice is not one\n");
  RunResult users = cluster.Ctl({"user", "list"});
  INFO(users.out);
  CHECK(users.out.find("alice") != std::string::npos);
  CHECK(users.out.find(alice) == std::string::npos);  // never a token
}

TEST_CASE("clusterctl user remove refuses the user's next call, also after a head restart", "[users]") {
  Cluster cluster;
  REQUIRE(cluster.StartHead({"--node-ip-address", "127.0.0.1", "--num-cpus", "1"}).exit_code == 0);
  const std::string carol = AddUser(cluster, "carol");
  REQUIRE(As(cluster, carol, {"jobs"}).exit_code == 0);
  RunResult removed = cluster.Ctl({"user", "remove", "carol"});
  INFO(removed.err);
  REQUIRE(removed.exit_code == 0);
  RunResult refused = As(cluster, carol, {"jobs"});
  CHECK(refused.exit_code != 0);
  CHECK(refused.err.find("this token was revoked: user carol was removed") != std::string::npos);

  const std::string dave = AddUser(cluster, "dave");
  cluster.KillHead(SIGKILL);
  RunResult restarted = cluster.StartHead({"--node-ip-address", "127.0.0.1", "--num-cpus", "1"});
  INFO(restarted.err);
  REQUIRE(restarted.exit_code == 0);
  CHECK(As(cluster, dave, {"whoami"}).out == "dave\n");  // journalled
  CHECK(As(cluster, carol, {"jobs"}).err.find("this token was revoked") != std::string::npos);
}

TEST_CASE("a worker joins with a node token, which can do nothing else, and a user's token registers no node",
          "[users]") {
  Cluster cluster;
  REQUIRE(cluster.StartHead({"--node-ip-address", "127.0.0.1", "--num-cpus", "1"}).exit_code == 0);
  RunResult made = cluster.Ctl({"token", "create", "--node", "--label", "test workers", "--json"});
  INFO(made.err);
  REQUIRE(made.exit_code == 0);
  const std::string node_token = JsonString(made.out, "token");
  REQUIRE(!node_token.empty());

  RunResult joined = cluster.StartWorker("w1", {"--num-cpus", "1", "--token", node_token});
  INFO(joined.err);
  REQUIRE(joined.exit_code == 0);
  WaitFor([&] { return cluster.StateOf("w1") == ALIVE; }, std::chrono::seconds(20), std::chrono::milliseconds(100));
  CHECK(cluster.StateOf("w1") == ALIVE);

  RunResult submit = As(cluster, node_token, {"submit", SleeperFile(cluster)});
  CHECK(submit.exit_code != 0);
  CHECK(submit.err == "clusterctl: a node token may only register a node\n");
  CHECK(As(cluster, node_token, {"jobs"}).err == "clusterctl: a node token may only register a node\n");

  const std::string erin = AddUser(cluster, "erin");
  RunResult as_user = cluster.StartWorker("w2", {"--num-cpus", "1", "--token", erin});
  INFO(as_user.err);
  CHECK(as_user.exit_code != 0);
  CHECK(as_user.err.find("user erin may not register a node") != std::string::npos);

  RunResult listed = cluster.Ctl({"token", "list"});
  CHECK(listed.out.find("nodetoken-0001") != std::string::npos);
  CHECK(listed.out.find(node_token) == std::string::npos);
}

TEST_CASE("the HTTP API and the dashboard obey the same rules as clusterctl", "[users][dashboard]") {
  Cluster cluster;
  const int port = FreePort();
  REQUIRE(cluster.StartHead({"--node-ip-address", "127.0.0.1", "--num-cpus", "2", "--dashboard-port",
                             std::to_string(port)})
              .exit_code == 0);
  const std::string alice = AddUser(cluster, "alice");
  const std::string bob = AddUser(cluster, "bob");
  const std::string job = Submit(cluster, alice, SleeperFile(cluster));

  // Reads of the queue are anyone's, with owners; logs are the owner's.
  CHECK(HttpGet(port, "/api/jobs", bob).find("\"owner\":\"alice\"") != std::string::npos);
  const std::string logs = HttpGet(port, "/api/logs?id=" + job + "&rank=0", bob);
  INFO(logs);
  CHECK(logs.rfind("HTTP/1.1 403", 0) == 0);
  CHECK(logs.find(job + " belongs to alice; bob may not read its logs") != std::string::npos);
  CHECK(HttpGet(port, "/api/logs?id=" + job + "&rank=0", alice).rfind("HTTP/1.1 200", 0) == 0);

  // Writes: the same refusals.
  const std::string stop = "POST /api/job/stop?id=" + job +
                           " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nAuthorization: Bearer " + bob +
                           "\r\nContent-Length: 0\r\n\r\n";
  const std::string refused = Exchange(ConnectLoopback(port), stop, std::chrono::seconds(30));
  INFO(refused);
  CHECK(refused.rfind("HTTP/1.1 403", 0) == 0);
  CHECK(refused.find(job + " belongs to alice; bob may not stop it") != std::string::npos);

  // A removed user's token opens nothing.
  REQUIRE(cluster.Ctl({"user", "remove", "bob"}).exit_code == 0);
  const std::string gone = HttpGet(port, "/api/jobs", bob);
  CHECK(gone.rfind("HTTP/1.1 401", 0) == 0);
  CHECK(gone.find("this token was revoked: user bob was removed") != std::string::npos);
  // The dashboard's page takes a user's token into its cookie, and no node's.
  CHECK(HttpGet(port, "/?token=" + alice, "").rfind("HTTP/1.1 303", 0) == 0);
}

TEST_CASE("a job's outputs are fetched by its owner and an admin, and another user is told whose they are", "[users]") {
  namespace fs = std::filesystem;
  Cluster cluster;
  REQUIRE(cluster.StartHead({"--node-ip-address", "127.0.0.1", "--num-cpus", "1"}).exit_code == 0);
  const std::string alice = AddUser(cluster, "alice");
  const std::string bob = AddUser(cluster, "bob");
  const fs::path dir = fs::path(cluster.temp_dir()) / "writer";
  fs::create_directories(dir);
  std::ofstream((dir / "job.yaml").string()) << "name: writer\nworking_dir: " << dir.string()
                                             << "\nentrypoint: ['/bin/sh', '-c', "
                                                "'echo secret > out.txt']\noutputs: [out.txt]\nmax_failures: 0\n";
  RunResult ran = As(cluster, alice, {"submit", (dir / "job.yaml").string(), "--follow"});
  INFO(ran.out << ran.err);
  REQUIRE(ran.exit_code == 0);
  const std::string marker = "Submitted job ";
  const size_t at = ran.out.find(marker) + marker.size();
  const std::string job = ran.out.substr(at, ran.out.find_first_of(" \n", at) - at);

  RunResult shown = As(cluster, bob, {"job", job, "--json"});
  INFO(shown.out);
  CHECK(JsonString(shown.out, "outputs_manifest") == "(hidden)");
  CHECK(JsonString(shown.out, "package_id") == "(hidden)");
  RunResult refused = As(cluster, bob, {"fetch", job, "--out", cluster.temp_dir() + "/bobs"});
  CHECK(refused.exit_code != 0);
  CHECK(refused.err == "clusterctl: " + job + " belongs to alice; only they or an admin may read its outputs\n");

  const std::string mine = JsonString(As(cluster, alice, {"job", job, "--json"}).out, "outputs_manifest");
  CHECK(mine.size() == 64);
  CHECK(As(cluster, alice, {"fetch", job, "--out", cluster.temp_dir() + "/alices"}).exit_code == 0);
  CHECK(Slurp(cluster.temp_dir() + "/alices/out.txt") == "secret\n");
  CHECK(cluster.Ctl({"fetch", job, "--out", cluster.temp_dir() + "/admins"}).exit_code == 0);
}
