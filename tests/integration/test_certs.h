// Certificates made with the `openssl` command at run time, in a temporary
// folder removed afterwards: a CA, a head certificate it signed (naming
// the IPs given), and a second, unrelated CA.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness.h"

namespace clusterd::testing {

// Writes the CA, the head's certificate naming `ips` and the unrelated CA
// into `dir` (the file names TestCerts gives); "" or what openssl said.
// No Catch here, so that a benchmark can use it outside a test.
inline std::string WriteTestCerts(const std::string& dir, const std::vector<std::string>& ips) {
  auto openssl = [](std::vector<std::string> args) {
    args.insert(args.begin(), "/usr/bin/openssl");
    RunResult r = Run(args);
    return r.exit_code == 0 ? std::string() : "openssl: " + r.err;
  };
  auto self_signed = [&](const std::string& name, const std::string& subject) {
    return openssl({"req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", dir + "/" + name + ".key", "-out",
                    dir + "/" + name + ".pem", "-days", "2", "-subj", "/CN=" + subject});
  };
  std::string san = "subjectAltName=";
  for (const auto& ip : ips) san += (&ip == &ips.front() ? "IP:" : ",IP:") + ip;
  std::ofstream(dir + "/head.ext") << san << "\n";
  for (const std::string& error :
       {self_signed("ca", "clusterd test CA"), self_signed("wrong-ca", "some other CA"),
        openssl({"req", "-newkey", "rsa:2048", "-nodes", "-keyout", dir + "/head.key", "-out", dir + "/head.csr",
                 "-subj", "/CN=clusterd-head"}),
        openssl({"x509", "-req", "-in", dir + "/head.csr", "-CA", dir + "/ca.pem", "-CAkey", dir + "/ca.key",
                 "-CAcreateserial", "-out", dir + "/head.pem", "-days", "2", "-extfile", dir + "/head.ext"})}) {
    if (!error.empty()) return error;
  }
  return "";
}

class TestCerts {
 public:
  explicit TestCerts(const std::vector<std::string>& ips = {"127.0.0.1"}) {
    char dir[] = "/tmp/clusterd-certs-XXXXXX";
    if (mkdtemp(dir) == nullptr) throw std::runtime_error("mkdtemp failed");
    dir_ = dir;
    error_ = WriteTestCerts(dir_, ips);
  }
  ~TestCerts() { Run({"/bin/rm", "-rf", dir_}); }

  // "" when every file was made, else what openssl said (tests REQUIRE it empty).
  const std::string& error() const { return error_; }
  const std::string& dir() const { return dir_; }
  std::string ca() const { return dir_ + "/ca.pem"; }
  std::string wrong_ca() const { return dir_ + "/wrong-ca.pem"; }
  std::string cert() const { return dir_ + "/head.pem"; }
  std::string key() const { return dir_ + "/head.key"; }
  // The flags a head serves TLS with.
  std::vector<std::string> HeadFlags() const { return {"--tls-cert", cert(), "--tls-key", key(), "--tls-ca", ca()}; }

 private:
  std::string dir_;
  std::string error_;
};

}  // namespace clusterd::testing
