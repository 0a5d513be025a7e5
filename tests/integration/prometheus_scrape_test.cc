// Debian's prometheus scrapes a real head's /metrics with the cluster token
// as its bearer credential (the `authorization` scrape setting), and its
// HTTP API then answers with the cluster's nodes and a job's reported metric.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>

#include "harness.h"
#include "http_get.h"
#include "job_json.h"
#include "machines.h"

using namespace clusterd;
using namespace clusterd::testing;
using namespace std::chrono_literals;

namespace {

const char* kPrometheus = "/usr/bin/prometheus";

// The one value of an instant query's answer, "" while it has none.
std::string QueryValue(int port, const std::string& url_encoded_query) {
  std::string body = TryHttpGet(port, "/api/v1/query?query=" + url_encoded_query);
  auto value = body.find("\"value\":[");
  if (value == std::string::npos) return "";
  auto start = body.find(",\"", value) + 2;
  return body.substr(start, body.find('"', start) - start);
}

// The prometheus process, SIGKILLed at the end (its data is a temp folder).
struct Prometheus {
  pid_t pid = -1;
  ~Prometheus() {
    if (pid > 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  }
};

// A rank that reports {"loss": 0.125} once over the agent socket, as
// ctrain::report() does (python3 speaks the 4-byte-length framing).
const char* kReportingRank = R"(|
  /usr/bin/python3 -c '
  import json, os, socket, struct
  s = socket.socket(socket.AF_UNIX); s.connect(os.environ["CLUSTER_AGENT_SOCKET"])
  body = json.dumps({"jobId": os.environ["CLUSTER_JOB_ID"], "attempt": int(os.environ["CLUSTER_ATTEMPT"]),
                     "rank": 0, "values": {"loss": 0.125}}).encode()
  s.sendall(struct.pack(">I", len(body)) + body)
  n = struct.unpack(">I", s.recv(4))[0]; print(s.recv(n).decode())
  ')";

}  // namespace

TEST_CASE("Prometheus scrapes the head with the token and sees the nodes and a job's metric", "[prometheus]") {
  if (access(kPrometheus, X_OK) != 0) {
    SkipTest("no /usr/bin/prometheus (Debian package prometheus)");
    return;
  }
  Cluster cluster;
  int dashboard = FreePort();
  REQUIRE(cluster.StartHead({"--num-cpus", "1", "--dashboard-port", std::to_string(dashboard)}).exit_code == 0);
  REQUIRE(cluster.StartWorker("w1", {"--num-cpus", "1"}).exit_code == 0);
  std::string token;
  std::ifstream(cluster.temp_dir() + "/session_latest/token") >> token;
  REQUIRE(token.size() == 32);

  std::string job = cluster.temp_dir() + "/reporter.yaml";
  std::ofstream(job) << "name: reporter\nworking_dir: " << cluster.temp_dir() << "\nworking_dir_mode: shared\n"
                     << "entrypoint: " << kReportingRank << "\n";
  RunResult submitted = cluster.Ctl({"submit", job, "--follow", "--json"}, 60s);
  INFO(submitted.out << submitted.err);
  REQUIRE(submitted.exit_code == 0);
  std::string id = SubmittedJobId(submitted);

  // Two scrape jobs: the right token, and a wrong one that must get nothing.
  int web = FreePort();
  std::string config = cluster.temp_dir() + "/prometheus.yml";
  std::ofstream(config) << "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
                        << "scrape_configs:\n"
                        << "  - job_name: clusterd\n"
                        << "    honor_labels: true\n"  // clusterd_job_metric's own `job` label, as packaging/prometheus.yml
                        << "    authorization: {credentials: " << token << "}\n"
                        << "    static_configs: [{targets: ['127.0.0.1:" << dashboard << "']}]\n"
                        << "  - job_name: wrong-token\n"
                        << "    authorization: {credentials: not-the-token}\n"
                        << "    static_configs: [{targets: ['127.0.0.1:" << dashboard << "']}]\n";
  Prometheus prometheus;
  prometheus.pid = fork();
  REQUIRE(prometheus.pid >= 0);
  if (prometheus.pid == 0) {
    int log = open((cluster.temp_dir() + "/prometheus.log").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(log, STDOUT_FILENO);
    dup2(log, STDERR_FILENO);
    std::string config_flag = "--config.file=" + config;
    std::string data_flag = "--storage.tsdb.path=" + cluster.temp_dir() + "/prometheus-data";
    std::string web_flag = "--web.listen-address=127.0.0.1:" + std::to_string(web);
    execl(kPrometheus, kPrometheus, config_flag.c_str(), data_flag.c_str(), web_flag.c_str(), nullptr);
    _exit(127);
  }

  // One scrape after start (about 5 s here); 60 s is an outer bound.
  std::string alive;
  bool scraped = WaitFor([&] { return !(alive = QueryValue(web, "clusterd_nodes%7Bstate%3D%22ALIVE%22%7D")).empty(); },
                         60s, 250ms);
  INFO("prometheus log: " << std::ifstream(cluster.temp_dir() + "/prometheus.log").rdbuf());
  REQUIRE(scraped);
  REQUIRE(alive == std::to_string(cluster.Status().nodes_size()));
  REQUIRE(alive == "2");
  REQUIRE(QueryValue(web, "clusterd_job_metric%7Bjob%3D%22" + id + "%22%2Cname%3D%22loss%22%7D") == "0.125");
  REQUIRE(QueryValue(web, "up%7Bjob%3D%22clusterd%22%7D") == "1");
  REQUIRE(QueryValue(web, "clusterd_node_resource_capacity%7Bnode%3D%22w1%22%2Cresource%3D%22CPU%22%7D") == "1");
  // The RPC latency histogram counted clusterctl's calls.
  REQUIRE(!QueryValue(web, "sum(clusterd_rpc_duration_seconds_count)").empty());
  // The wrong token's scrape was refused (up 0 once it was tried).
  REQUIRE(WaitFor([&] { return QueryValue(web, "up%7Bjob%3D%22wrong-token%22%7D") == "0"; }, 30s, 250ms));
}
