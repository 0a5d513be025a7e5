// Who reads a job's metrics on a real head (docs/SHARING.md, "Users and
// tokens"): what a job's ranks report is its results, the owner's and the
// admins' as its logs and outputs are, through clusterctl, the HTTP API and
// /metrics alike; /metrics still shows every holder of a user's token the
// cluster's own state.
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

// A job whose rank 0 reports {"loss": 0.125} once over the agent socket, as
// ctrain::report() does (python3 speaks the 4-byte-length framing).
std::string ReportingJobFile(const Cluster& cluster) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(cluster.temp_dir()) / "reporter";
  fs::create_directories(dir);
  const std::string path = (dir / "job.yaml").string();
  std::ofstream(path) << "name: reporter\nworking_dir: " << dir.string() << "\nworking_dir_mode: shared\n"
                      << "max_failures: 0\nentrypoint: ['/usr/bin/python3', '-c', '"
                      << "import json, os, socket, struct; "
                         "s = socket.socket(socket.AF_UNIX); s.connect(os.environ[\"CLUSTER_AGENT_SOCKET\"]); "
                         "body = json.dumps({\"jobId\": os.environ[\"CLUSTER_JOB_ID\"], "
                         "\"attempt\": int(os.environ[\"CLUSTER_ATTEMPT\"]), \"rank\": 0, "
                         "\"values\": {\"loss\": 0.125}}).encode(); "
                         "s.sendall(struct.pack(\">I\", len(body)) + body); "
                         "n = struct.unpack(\">I\", s.recv(4))[0]; s.recv(n)']\n";
  return path;
}

}  // namespace

TEST_CASE("a job's metrics are its owner's and admins' in clusterctl, the HTTP API and /metrics", "[users][metrics]") {
  Cluster cluster;
  const int port = FreePort();
  REQUIRE(cluster.StartHead({"--node-ip-address", "127.0.0.1", "--num-cpus", "1", "--dashboard-port",
                             std::to_string(port)})
              .exit_code == 0);
  const std::string alice = AddUser(cluster, "alice");
  const std::string bob = AddUser(cluster, "bob");
  RunResult ran = cluster.Ctl({"submit", ReportingJobFile(cluster), "--follow", "--token", alice});
  INFO(ran.out << ran.err);
  REQUIRE(ran.exit_code == 0);
  const std::string marker = "Submitted job ";
  const size_t at = ran.out.find(marker) + marker.size();
  const std::string job = ran.out.substr(at, ran.out.find_first_of(" \n", at) - at);

  // clusterctl metrics (GetMetrics).
  RunResult own = cluster.Ctl({"metrics", job, "--json", "--token", alice});
  INFO(own.err);
  CHECK(own.exit_code == 0);
  CHECK(own.out.find("0.125") != std::string::npos);
  CHECK(cluster.Ctl({"metrics", job, "--json"}).out.find("0.125") != std::string::npos);  // the admin
  RunResult others = cluster.Ctl({"metrics", job, "--json", "--token", bob});
  CHECK(others.exit_code != 0);
  CHECK(others.err == "clusterctl: " + job + " belongs to alice; bob may not read its metrics\n");
  CHECK(others.out.find("0.125") == std::string::npos);
  // The job itself is anyone's to look at.
  CHECK(cluster.Ctl({"job", job, "--token", bob}).exit_code == 0);

  // The HTTP API.
  const std::string api = HttpGet(port, "/api/metrics?id=" + job, bob);
  INFO(api);
  CHECK(api.rfind("HTTP/1.1 403", 0) == 0);
  CHECK(api.find(job + " belongs to alice; bob may not read its metrics") != std::string::npos);
  CHECK(HttpGet(port, "/api/metrics?id=" + job, alice).find("0.125") != std::string::npos);

  // /metrics: the cluster's state for any user; the job's values for its owner and admins.
  const std::string series = "clusterd_job_metric{job=\"" + job + "\",name=\"loss\"} 0.125";
  const std::string bobs = HttpGet(port, "/metrics", bob);
  INFO(bobs);
  CHECK(bobs.rfind("HTTP/1.1 200", 0) == 0);
  CHECK(bobs.find("clusterd_nodes{state=\"ALIVE\"} 1") != std::string::npos);
  CHECK(bobs.find("clusterd_jobs{state=\"SUCCEEDED\"} 1") != std::string::npos);
  CHECK(bobs.find(series) == std::string::npos);
  CHECK(HttpGet(port, "/metrics", alice).find(series) != std::string::npos);
  CHECK(HttpGet(port, "/metrics", cluster.Token()).find(series) != std::string::npos);
}
