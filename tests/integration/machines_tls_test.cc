// TLS across simulated machines (machines.h): the head's certificate names
// its address on the bridge; a worker and a client machine hold only a copy
// of the CA. A shipped job runs on both nodes, and a client without the CA
// is refused in one line. Needs root; skipped elsewhere.
#include <catch2/catch.hpp>
#include <fstream>

#include "machines.h"
#include "machines_cluster.h"  // Trimmed
#include "test_certs.h"

using namespace clusterd;
using namespace clusterd::testing;
using namespace std::chrono_literals;

namespace {

void CopyTo(Machine& machine, const std::string& from, const std::string& to) {
  REQUIRE(Run({"/bin/cp", from, machine.HostPath(to)}).exit_code == 0);
}

}  // namespace

TEST_CASE("machines: a TLS head, a TLS worker and a client with the CA run a job, a client without it is refused",
          "[machines][tls]") {
  REQUIRE_SIM_NETWORK();
  SimNetwork net;
  Machine& head = net.AddMachine("head");
  Machine& w1 = net.AddMachine("w1");
  Machine& client = net.AddMachine("client");
  // Its address on the bridge only: the head's own agent, which dials
  // 127.0.0.1, must check the certificate against that address.
  TestCerts certs({head.ip()});
  REQUIRE(certs.error().empty());
  CopyTo(head, certs.cert(), "/tmp/head.pem");
  CopyTo(head, certs.key(), "/tmp/head.key");
  for (Machine* m : {&head, &w1, &client}) CopyTo(*m, certs.ca(), "/tmp/ca.pem");

  RunResult started = head.Run({"clusterd", "start", "--head", "--port", "6379", "--num-cpus", "1", "--tls-cert",
                                "/tmp/head.pem", "--tls-key", "/tmp/head.key", "--tls-ca", "/tmp/ca.pem"});
  INFO(started.out << started.err);
  REQUIRE(started.exit_code == 0);
  std::string address = head.ip() + ":6379";
  std::string token = Trimmed(Slurp(head.HostPath("/tmp/clusterd/session_latest/token")));
  RunResult joined = w1.Run({"clusterd", "start", "--address", address, "--num-cpus", "1", "--tls-ca", "/tmp/ca.pem"},
                            {{"CLUSTER_TOKEN", token}});
  INFO(joined.out << joined.err);
  REQUIRE(joined.exit_code == 0);

  std::map<std::string, std::string> env = {
      {"CLUSTER_ADDRESS", address}, {"CLUSTER_TOKEN", token}, {"CLUSTER_TLS_CA", "/tmp/ca.pem"}};
  RunResult status = client.Run({"clusterctl", "status"}, env, 10s);
  INFO(status.out << status.err);
  REQUIRE(status.exit_code == 0);
  REQUIRE(status.out.find("Alive (2)") != std::string::npos);

  // Shipped from the client: uploaded to the head's store, downloaded by both nodes, over TLS.
  REQUIRE(client.Shell("mkdir -p /tmp/proj && echo payload > /tmp/proj/data.txt && printf '"
                       "name: tls\\nentrypoint: cat data.txt\\nworking_dir: /tmp/proj\\nnum_workers: 2\\n"
                       "resources_per_worker: {CPU: 1}\\nplacement: SPREAD\\n' > /tmp/job.yaml")
              .exit_code == 0);
  RunResult run = client.Run({"clusterctl", "submit", "/tmp/job.yaml", "--follow"}, env, 90s);
  INFO(run.out << run.err);
  REQUIRE(run.exit_code == 0);
  REQUIRE(run.out.find("payload") != run.out.rfind("payload"));  // both ranks' lines

  env.erase("CLUSTER_TLS_CA");
  RunResult plain = client.Run({"clusterctl", "status"}, env, 10s);
  INFO(plain.err);
  REQUIRE(plain.exit_code != 0);
  REQUIRE(plain.err.find('\n') == plain.err.size() - 1);
  REQUIRE(plain.err.find("if the head uses TLS, give its CA with --tls-ca or CLUSTER_TLS_CA") != std::string::npos);

  for (Machine* m : {&head, &w1}) m->Run({"clusterd", "stop", "--force"});
}
