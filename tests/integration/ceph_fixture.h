// A real S3 server for tests: Ceph's radosgw from Debian, with one monitor
// and one memstore OSD, all in a temporary folder on free loopback ports
// (../shared/NOTES.md has the bring-up facts). Up in about 2 s. The
// destructor always SIGKILLs every daemon it started (radosgw ignores
// SIGTERM for seconds, and the state is thrown away anyway), reaps them and
// removes the folder, so no process is left.
// Tests that need it start with REQUIRE_CEPH(name): where Ceph is not
// installed or does not come up, the test is skipped (exit 77) saying why.
// Not thread-safe.
#pragma once

#include <stdlib.h>
#include <sys/types.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/storage/s3_client.h"
#include "harness.h"
#include "test_skip.h"

namespace clusterd::testing {

// Where Ceph runs: on this machine's loopback by default, or on a simulated
// machine (machines.h): every command wrapped in nsenter into its
// namespaces, the gateway on its address, the folder where it can see it.
struct CephPlace {
  std::vector<std::string> wrap;    // prepended to every command
  std::string gateway_host = "127.0.0.1";
  std::string parent_dir = "/tmp";  // a machine's /tmp is its own: use /var/tmp
};

class CephFixture {
 public:
  // Starts Ceph and creates an S3 user. nullptr, with *why_not set, when it
  // cannot (not installed, a daemon failed: the log's tail is included).
  static std::unique_ptr<CephFixture> Start(std::string* why_not, const CephPlace& place = {});
  ~CephFixture();
  CephFixture(const CephFixture&) = delete;
  CephFixture& operator=(const CephFixture&) = delete;

  // http://127.0.0.1:PORT
  std::string endpoint() const;
  int gateway_port() const { return gateway_port_; }
  const std::string& access_key() const { return access_key_; }
  const std::string& secret_key() const { return secret_key_; }
  const std::string& dir() const { return dir_; }
  // AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_ENDPOINT_URL, AWS_REGION
  // for a process that talks to this server.
  std::map<std::string, std::string> Env() const;
  // What an S3Client needs to talk to this server as its user, with parts
  // of 5 MiB (S3's least) so that a few MiB make a multipart upload.
  S3ClientOptions ClientOptions() const;

  // Creates a bucket (radosgw-admin has no bucket create; this is S3's own
  // PUT /BUCKET, signed by curl). Returns whether it worked.
  bool CreateBucket(const std::string& bucket);

  // Fault injection: radosgw dies at once (SIGKILL), and comes back on the
  // same port. RestartGateway returns whether it answers again.
  void KillGateway();
  bool RestartGateway();
  bool GatewayAlive() const;
  // Every daemon started and not yet killed.
  const std::vector<pid_t>& pids() const { return pids_; }

 private:
  CephFixture() = default;
  bool BringUp(std::string* why_not);
  // Starts `argv` with stdin from /dev/null and stdout/stderr into
  // <dir>/log/<name>.out, recording its pid.
  pid_t Spawn(const std::string& name, const std::vector<std::string>& argv);
  bool WaitForGateway();
  std::string Tail(const std::string& log_name) const;
  std::vector<std::string> Wrapped(std::vector<std::string> argv) const;
  RunResult RunHere(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
                    std::chrono::milliseconds timeout) const;

  CephPlace place_;
  std::string dir_;
  std::string conf_;
  int mon_port_ = 0;
  int gateway_port_ = 0;
  std::string access_key_ = "clusterdtestkey";
  std::string secret_key_ = "clusterdtestsecret";
  std::vector<pid_t> pids_;
  pid_t gateway_pid_ = -1;
};

// The daemons and clusterctl inherit this process's environment: `ceph`'s
// credentials and endpoint (CephFixture::Env), as each machine would have its own.
inline void UseCeph(const CephFixture& ceph) {
  for (const auto& [key, value] : ceph.Env()) setenv(key.c_str(), value.c_str(), 1);
}

// Test-runner glue: REQUIREs nothing, skips (SkipTest, exit 77) when Ceph
// cannot start here, and otherwise leaves `name` holding the running fixture.
#define REQUIRE_CEPH(name)                                                  \
  std::string name##_why_not;                                               \
  auto name = ::clusterd::testing::CephFixture::Start(&name##_why_not);     \
  if (!name) {                                                              \
    ::clusterd::testing::SkipTest("no Ceph radosgw here: " + name##_why_not); \
    return;                                                                 \
  }

}  // namespace clusterd::testing
