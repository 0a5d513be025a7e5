// The config table as the binaries see it: clusterctl's call deadline is
// rpc_timeout_ms, and `clusterd start` takes each daemon key as a flag.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>

#include "common/config.h"
#include "harness.h"

using namespace clusterd;
using namespace clusterd::testing;

namespace {

// A TCP port on loopback that completes connections (the kernel's backlog)
// and never says a word: a head that stopped answering.
class SilentListener {
 public:
  SilentListener() {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    if (bind(fd_, reinterpret_cast<sockaddr*>(&address), length) != 0 || listen(fd_, 16) != 0 ||
        getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
      FAIL("cannot listen on loopback");
    }
    port_ = ntohs(address.sin_port);
  }
  ~SilentListener() { close(fd_); }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  int fd_ = -1;
  int port_ = 0;
};

// An empty folder: no session there says TLS or gives an address.
class EmptyFolder {
 public:
  EmptyFolder() {
    char path[] = "/tmp/clusterd-config-keys-XXXXXX";
    REQUIRE(mkdtemp(path) != nullptr);
    path_ = path;
  }
  ~EmptyFolder() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace

TEST_CASE("clusterctl gives up on a silent head after rpc_timeout_ms, from CLUSTER_RPC_TIMEOUT_MS or --timeout-ms",
          "[cli][config][timeout]") {
  SilentListener head;
  EmptyFolder temp_dir;
  const std::vector<std::string> status = {CLUSTERCTL_BIN, "status", "--address", head.address(), "--token",
                                           "0123456789abcdef", "--temp-dir", temp_dir.path()};
  // Far below the table's default (5000 ms): a call that waited for that
  // instead would pass the bound below.
  const int timeout_ms = 300;
  REQUIRE(timeout_ms * 4 < Config().rpc_timeout_ms);

  auto start = std::chrono::steady_clock::now();
  RunResult from_env = Run(status, {{"CLUSTER_RPC_TIMEOUT_MS", std::to_string(timeout_ms)}});
  const int64_t env_ms = MillisSince(start);
  INFO(from_env.err);
  CHECK(from_env.exit_code == 1);
  CHECK(from_env.err.find("did not answer within " + std::to_string(timeout_ms) + " ms") != std::string::npos);
  CHECK(env_ms >= timeout_ms);
  // The deadline plus the start of a process: generous, and still short of the default.
  CHECK(env_ms < timeout_ms + Config().rpc_timeout_ms / 2);

  // The flag wins over the variable.
  std::vector<std::string> with_flag = status;
  with_flag.insert(with_flag.end(), {"--timeout-ms", "700"});
  start = std::chrono::steady_clock::now();
  RunResult from_flag = Run(with_flag, {{"CLUSTER_RPC_TIMEOUT_MS", std::to_string(timeout_ms)}});
  const int64_t flag_ms = MillisSince(start);
  INFO(from_flag.err);
  CHECK(from_flag.exit_code == 1);
  CHECK(from_flag.err.find("did not answer within 700 ms") != std::string::npos);
  CHECK(flag_ms >= 700);

  RunResult bad = Run(status, {{"CLUSTER_RPC_TIMEOUT_MS", "soon"}});
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("CLUSTER_RPC_TIMEOUT_MS='soon' is not a whole number") != std::string::npos);
}

TEST_CASE("clusterd start takes every daemon key of the config table as a flag, with its default",
          "[config][port]") {
  RunResult help = Run({CLUSTERD_BIN, "start", "--help"});
  REQUIRE(help.exit_code == 0);
  for (const ConfigEntry& entry : ConfigEntries()) {
    std::string flag = "--" + entry.name;
    for (char& c : flag) c = c == '_' ? '-' : c;
    INFO(flag);
    if (entry.clusterctl) {
      CHECK(help.out.find(flag + " ") == std::string::npos);
    } else {
      CHECK(help.out.find(flag + " ") != std::string::npos);
    }
  }
  CHECK(help.out.find("--port arg (=6379)") != std::string::npos);
  CHECK(help.out.find("--dashboard-port arg (=8265)") != std::string::npos);
}
