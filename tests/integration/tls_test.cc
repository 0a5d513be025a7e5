// TLS on real daemons (DESIGN rule 8), with certificates made by openssl at
// run time: a TLS head and a TLS worker run a shipped job (the stream, the
// store's upload and download) to SUCCEEDED; a client or worker without the
// right CA is refused in one clear line.
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "harness.h"
#include "job_json.h"
#include "test_certs.h"

using namespace clusterd;
using namespace clusterd::testing;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

std::string FirstLine(const std::string& text) { return text.substr(0, text.find('\n')); }

bool OneLine(const std::string& text) {
  return !text.empty() && text.find('\n') == text.size() - 1;
}

}  // namespace

TEST_CASE("a TLS head and a TLS worker run a shipped job to SUCCEEDED", "[tls]") {
  TestCerts certs;
  REQUIRE(certs.error().empty());
  Cluster cluster;
  std::vector<std::string> head = certs.HeadFlags();
  head.insert(head.end(), {"--num-cpus", "1"});
  RunResult started = cluster.StartHead(head);
  INFO(started.out << started.err);
  REQUIRE(started.exit_code == 0);
  // The join banner says what a worker needs; the session records the CA, never the key.
  REQUIRE(started.out.find("--tls-ca " + certs.ca()) != std::string::npos);
  REQUIRE(Run({"/bin/cat", cluster.temp_dir() + "/session_latest/tls_ca"}).out == certs.ca() + "\n");

  RunResult worker = cluster.StartWorker("w1", {"--num-cpus", "1", "--tls-ca", certs.ca()});
  INFO(worker.out << worker.err);
  REQUIRE(worker.exit_code == 0);
  REQUIRE(cluster.StateOf("w1") == ALIVE);

  // Shipped (not shared): clusterctl uploads the package and each node
  // downloads it from the head's store, all over TLS. One rank per node.
  fs::path proj = fs::path(cluster.temp_dir()) / "proj";
  fs::create_directories(proj);
  std::ofstream(proj / "data.txt") << "payload\n";
  std::string file = proj.string() + ".yaml";
  std::ofstream(file) << "name: over-tls\nentrypoint: cat data.txt\nworking_dir: " << proj.string()
                      << "\nnum_workers: 2\nresources_per_worker: {CPU: 1}\nplacement: SPREAD\n";
  RunResult run = cluster.Ctl({"submit", file, "--follow"}, 60s);
  INFO(run.out << run.err);
  REQUIRE(run.exit_code == 0);
  REQUIRE(run.out.find("payload") != std::string::npos);
  JobInfo job = ParseJson<ListJobsReply>(cluster.Ctl({"jobs", "--json"})).jobs(0);
  REQUIRE(job.state() == SUCCEEDED);

  // A worker given the wrong CA does not join, and says why.
  RunResult wrong = cluster.StartWorker("w2", {"--num-cpus", "1", "--tls-ca", certs.wrong_ca()});
  INFO(wrong.out << wrong.err);
  REQUIRE(wrong.exit_code != 0);
  REQUIRE(wrong.err.find("cannot reach the head at " + cluster.address() +
                         " over TLS: the head's certificate was not signed by the CA in " + certs.wrong_ca() + " (or it has expired)") !=
          std::string::npos);
  // A worker cannot serve TLS: its certificate flags are refused.
  RunResult serving = cluster.StartWorker("w3", {"--tls-cert", certs.cert(), "--tls-key", certs.key()});
  REQUIRE(serving.exit_code == 2);
  REQUIRE(serving.err.find("--tls-cert and --tls-key are the head's") != std::string::npos);
}

TEST_CASE("clusterctl without the right CA is refused by a TLS head in one line", "[tls]") {
  TestCerts certs;
  REQUIRE(certs.error().empty());
  Cluster cluster;
  std::vector<std::string> head = certs.HeadFlags();
  head.insert(head.end(), {"--num-cpus", "0", "--num-gpus", "0"});
  REQUIRE(cluster.StartHead(head).exit_code == 0);
  std::string token = FirstLine(Run({"/bin/cat", cluster.temp_dir() + "/session_latest/token"}).out);
  // Elsewhere: no session to find the CA in, only the address and token.
  std::string elsewhere = certs.dir() + "/elsewhere";
  fs::create_directories(elsewhere);
  auto ctl = [&](std::vector<std::string> args, const std::map<std::string, std::string>& env = {}) {
    args.insert(args.begin(), {CLUSTERCTL_BIN, "status"});
    args.insert(args.end(), {"--address", cluster.address(), "--token", token, "--temp-dir", elsewhere});
    return Run(args, env);
  };

  // The local session knows the CA: plain `clusterctl status` works.
  REQUIRE(cluster.Ctl({"status"}).exit_code == 0);
  // So do CLUSTER_TLS_CA and --tls-ca.
  REQUIRE(ctl({}, {{"CLUSTER_TLS_CA", certs.ca()}}).exit_code == 0);
  REQUIRE(ctl({"--tls-ca", certs.ca()}).exit_code == 0);

  RunResult wrong = ctl({"--tls-ca", certs.wrong_ca()});
  INFO(wrong.err);
  REQUIRE(wrong.exit_code != 0);
  REQUIRE(OneLine(wrong.err));
  REQUIRE(wrong.err == "clusterctl: cannot reach the head at " + cluster.address() +
                           " over TLS: the head's certificate was not signed by the CA in " + certs.wrong_ca() +
                           " (or it has expired)\n");
  RunResult wrong_env = ctl({}, {{"CLUSTER_TLS_CA", certs.wrong_ca()}});
  REQUIRE(wrong_env.err == wrong.err);

  // Without a CA, clusterctl speaks plaintext; the head hangs up, and the line says what to do.
  RunResult plain = ctl({});
  INFO(plain.err);
  REQUIRE(plain.exit_code != 0);
  REQUIRE(OneLine(plain.err));
  REQUIRE(plain.err.find("cannot reach a clusterd head at " + cluster.address()) != std::string::npos);
  REQUIRE(plain.err.find("if the head uses TLS, give its CA with --tls-ca or CLUSTER_TLS_CA") != std::string::npos);

  RunResult missing = ctl({"--tls-ca", certs.dir() + "/nothere.pem"});
  REQUIRE(missing.err == "clusterctl: --tls-ca " + certs.dir() + "/nothere.pem: cannot read the file\n");
}

TEST_CASE("a TLS client of a plaintext head, and bad TLS flags, are refused in one line", "[tls]") {
  TestCerts certs;
  REQUIRE(certs.error().empty());
  Cluster cluster;
  REQUIRE(cluster.StartHead({"--num-cpus", "0", "--num-gpus", "0"}).exit_code == 0);
  RunResult tls = cluster.Ctl({"status", "--tls-ca", certs.ca()});
  INFO(tls.err);
  REQUIRE(tls.err == "clusterctl: cannot reach the head at " + cluster.address() +
                         " over TLS: the head does not speak TLS (it was started without --tls-cert and --tls-key)\n");

  Cluster other;
  RunResult alone = other.StartHead({"--tls-cert", certs.cert()});
  REQUIRE(alone.exit_code == 2);
  REQUIRE(alone.err == "clusterd start: --tls-cert and --tls-key go together: give both, or neither\n");
  RunResult mismatched = other.StartHead({"--tls-cert", certs.cert(), "--tls-key", certs.dir() + "/ca.key"});
  REQUIRE(mismatched.exit_code == 2);
  REQUIRE(mismatched.err.find("not the key of the certificate in " + certs.cert()) != std::string::npos);
  // A head with an expired certificate does not start, and says so with the
  // date, rather than its clients being told it was "not signed by the CA".
  const std::string expired = certs.dir() + "/expired.pem";
  REQUIRE(Run({"/usr/bin/openssl", "x509", "-req", "-in", certs.dir() + "/head.csr", "-CA", certs.ca(), "-CAkey",
               certs.dir() + "/ca.key", "-CAcreateserial", "-out", expired, "-days", "0"}).exit_code == 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  RunResult stale = other.StartHead({"--tls-cert", expired, "--tls-key", certs.key()});
  INFO(stale.err);
  REQUIRE(stale.exit_code == 2);
  REQUIRE(stale.err.rfind("clusterd start: --tls-cert " + expired + ": it expired on ", 0) == 0);
}
