// Certificates made with the `openssl` command at run time, in a temporary
// folder removed afterwards: a CA, a head certificate it signed (naming
// the IPs given), and a second, unrelated CA.
#pragma once

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "harness.h"

namespace clusterd::testing {

class TestCerts {
 public:
  explicit TestCerts(const std::vector<std::string>& ips = {"127.0.0.1"}) {
    char dir[] = "/tmp/clusterd-certs-XXXXXX";
    REQUIRE(mkdtemp(dir) != nullptr);
    dir_ = dir;
    SelfSigned("ca", "clusterd test CA");
    SelfSigned("wrong-ca", "some other CA");
    std::string san = "subjectAltName=";
    for (const auto& ip : ips) san += (&ip == &ips.front() ? "IP:" : ",IP:") + ip;
    std::ofstream(dir_ + "/head.ext") << san << "\n";
    Openssl({"req", "-newkey", "rsa:2048", "-nodes", "-keyout", key(), "-out", dir_ + "/head.csr", "-subj",
             "/CN=clusterd-head"});
    Openssl({"x509", "-req", "-in", dir_ + "/head.csr", "-CA", ca(), "-CAkey", dir_ + "/ca.key", "-CAcreateserial",
             "-out", cert(), "-days", "2", "-extfile", dir_ + "/head.ext"});
  }
  ~TestCerts() { Run({"/bin/rm", "-rf", dir_}); }

  const std::string& dir() const { return dir_; }
  std::string ca() const { return dir_ + "/ca.pem"; }
  std::string wrong_ca() const { return dir_ + "/wrong-ca.pem"; }
  std::string cert() const { return dir_ + "/head.pem"; }
  std::string key() const { return dir_ + "/head.key"; }
  // The flags a head serves TLS with.
  std::vector<std::string> HeadFlags() const { return {"--tls-cert", cert(), "--tls-key", key(), "--tls-ca", ca()}; }

 private:
  void SelfSigned(const std::string& name, const std::string& subject) {
    Openssl({"req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", dir_ + "/" + name + ".key", "-out",
             dir_ + "/" + name + ".pem", "-days", "2", "-subj", "/CN=" + subject});
  }
  static void Openssl(std::vector<std::string> args) {
    args.insert(args.begin(), "/usr/bin/openssl");
    RunResult r = Run(args);
    INFO("openssl: " << r.err);
    REQUIRE(r.exit_code == 0);
  }

  std::string dir_;
};

}  // namespace clusterd::testing
