// The control plane on real processes: a head and two workers on a free
// loopback port, liveness after SIGKILL/SIGSTOP, tokens, bad input, stop.
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <netinet/in.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <thread>

#include "common/resources.h"
#include "harness.h"
#include "job_json.h"

using namespace clusterd;
using namespace clusterd::testing;
using namespace std::chrono_literals;

namespace {

// By value: callers pass a temporary status.
NodeInfo NodeNamed(const ClusterStatus& status, const std::string& name) {
  for (const auto& node : status.nodes()) {
    if (node.name() == name) return node;
  }
  FAIL("no node named " << name);
  return NodeInfo();
}

// Heartbeat and timeout short enough to keep the test quick, long enough
// for a loaded 2-core machine.
const std::vector<std::string> kTiming = {"--heartbeat-ms", "200", "--node-timeout-ms", "1000"};

std::vector<std::string> With(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// A head and worker w1 with the short timing; returns w1's pid.
pid_t StartHeadAndWorker(Cluster& cluster) {
  REQUIRE(cluster.StartHead(With({"--num-cpus", "1"}, kTiming)).exit_code == 0);
  REQUIRE(cluster.StartWorker("w1", With({"--num-cpus", "1"}, kTiming)).exit_code == 0);
  pid_t pid = cluster.WorkerPid("w1");
  REQUIRE(pid > 0);
  return pid;
}

}  // namespace

TEST_CASE("a head and two workers are ALIVE with the right totals", "[control_plane]") {
  Cluster cluster;
  REQUIRE(cluster.StartHead({"--num-cpus", "2", "--memory", "1000000"}).exit_code == 0);
  REQUIRE(cluster.StartWorker("w1", {"--num-cpus", "4", "--num-gpus", "2", "--resources", R"({"tpu": 3})"}).exit_code == 0);
  REQUIRE(cluster.StartWorker("w2", {"--num-cpus", "3"}).exit_code == 0);

  ClusterStatus status = cluster.Status();
  REQUIRE(status.nodes_size() == 3);
  for (const auto& node : status.nodes()) REQUIRE(node.state() == ALIVE);
  REQUIRE(status.nodes(0).name() == "head");
  REQUIRE(status.nodes(0).is_head());
  REQUIRE(Amount(status.total(), kCpu) == 9);
  REQUIRE(Amount(status.total(), kGpu) == 2);
  REQUIRE(Amount(status.total(), "tpu") == 3);
  REQUIRE(Amount(NodeNamed(status, "head").total(), kMemory) == 1000000);
  REQUIRE(NodeNamed(status, "w1").gpu_indexes_size() == 2);
  REQUIRE(status.head_address() == cluster.address());

  // The human-readable form names every node under "Alive (3)".
  RunResult text = cluster.Ctl({"status"});
  REQUIRE(text.exit_code == 0);
  REQUIRE(text.out.find("Alive (3):") != std::string::npos);
  REQUIRE(text.out.find(" 0/9 CPU") != std::string::npos);

  // `clusterctl nodes` pages through the table: one node per call here.
  RunResult paged = cluster.Ctl({"nodes", "--page-size", "1"});
  REQUIRE(paged.exit_code == 0);
  size_t head_at = paged.out.find("\nhead* ");
  size_t w1_at = paged.out.find("\nw1 ");
  size_t w2_at = paged.out.find("\nw2 ");
  REQUIRE(head_at != std::string::npos);
  REQUIRE(w1_at != std::string::npos);
  REQUIRE(w2_at != std::string::npos);
  REQUIRE((head_at < w1_at && w1_at < w2_at));
  REQUIRE(paged.out.find(" of 3 nodes") == std::string::npos);
  RunResult limited = cluster.Ctl({"nodes", "--limit", "2", "--page-size", "1"});
  REQUIRE(limited.exit_code == 0);
  REQUIRE(limited.out.find("\nw2 ") == std::string::npos);
  REQUIRE(limited.out.find("(2 of 3 nodes; --limit 0 lists all)") != std::string::npos);
  RunResult bad = cluster.Ctl({"nodes", "--page-size", "0"});
  REQUIRE(bad.exit_code != 0);
  REQUIRE(bad.err.find("--page-size must be positive") != std::string::npos);
}

// Typed as printed, the banners' commands reach this cluster, not the
// default temp folder's (another person's cluster, on a shared machine).
TEST_CASE("the start banners' commands carry the --temp-dir the daemons were started with", "[control_plane]") {
  Cluster cluster;
  RunResult head = cluster.StartHead({"--num-cpus", "1"});
  REQUIRE(head.exit_code == 0);
  INFO(head.out);
  REQUIRE(head.out.find("  clusterctl status --temp-dir " + cluster.temp_dir() + "\n") != std::string::npos);
  REQUIRE(head.out.find("  clusterd stop --temp-dir " + cluster.temp_dir()) != std::string::npos);
  RunResult worker = cluster.StartWorker("w1", {"--num-cpus", "1"});
  REQUIRE(worker.exit_code == 0);
  REQUIRE(worker.out.find("To stop it: clusterd stop --temp-dir " + cluster.temp_dir()) != std::string::npos);
  RunResult status = Run({CLUSTERCTL_BIN, "status", "--temp-dir", cluster.temp_dir()});
  REQUIRE(status.exit_code == 0);
  REQUIRE(status.out.find("Alive (2):") != std::string::npos);
}

TEST_CASE("a SIGKILLed worker is DEAD within a heartbeat and ALIVE again after restart", "[control_plane][liveness]") {
  Cluster cluster;
  pid_t pid = StartHeadAndWorker(cluster);

  auto start = std::chrono::steady_clock::now();
  kill(pid, SIGKILL);
  REQUIRE(WaitFor([&] { return cluster.StateOf("w1") == DEAD; }, 5s));
  int64_t detected_ms = MillisSince(start);
  INFO("SIGKILL detected after " << detected_ms << " ms");
  CHECK(detected_ms < 200);  // one heartbeat; a broken stream is seen at once
  REQUIRE(NodeNamed(cluster.Status(), "w1").state_reason() == "connection to the node agent lost");

  REQUIRE(cluster.StartWorker("w1", With({"--num-cpus", "1"}, kTiming)).exit_code == 0);
  const NodeInfo back = NodeNamed(cluster.Status(), "w1");
  REQUIRE(back.state() == ALIVE);
  REQUIRE(back.incarnation() == 2);
}

TEST_CASE("a SIGSTOPped worker is DEAD after node-timeout, not before, and ALIVE after SIGCONT", "[control_plane][liveness]") {
  Cluster cluster;
  pid_t pid = StartHeadAndWorker(cluster);

  auto start = std::chrono::steady_clock::now();
  kill(pid, SIGSTOP);
  REQUIRE(WaitFor([&] { return cluster.StateOf("w1") == DEAD; }, 10s));
  int64_t detected_ms = MillisSince(start);
  INFO("SIGSTOP detected after " << detected_ms << " ms");
  // Its last heartbeat came at most one period before the stop.
  CHECK(detected_ms >= 1000 - 200);
  CHECK(detected_ms <= 1000 + 200 + 100);  // timeout + a heartbeat, + polling of status
  REQUIRE(NodeNamed(cluster.Status(), "w1").state_reason().find("no heartbeat for") == 0);

  kill(pid, SIGCONT);
  REQUIRE(WaitFor([&] { return cluster.StateOf("w1") == ALIVE; }, 10s));
  REQUIRE(NodeNamed(cluster.Status(), "w1").incarnation() == 2);
}

TEST_CASE("a wrong or missing token is refused in one line", "[control_plane][auth]") {
  Cluster cluster;
  REQUIRE(cluster.StartHead({"--num-cpus", "1"}).exit_code == 0);

  RunResult wrong = cluster.Ctl({"status", "--token", "not-the-token"});
  REQUIRE(wrong.exit_code == 1);
  REQUIRE(wrong.err == "clusterctl: the head at " + cluster.address() +
                           " refused the call: wrong cluster token (see the token file in the head's session folder)\n");

  RunResult worker = cluster.StartWorker("w1", {"--token", "not-the-token"});
  REQUIRE(worker.exit_code == 1);
  REQUIRE(worker.err.find("wrong cluster token") != std::string::npos);
  REQUIRE(cluster.Status().nodes_size() == 1);
  REQUIRE(cluster.DaemonPids().size() == 1);  // no half-started worker
}

// A token of one character could be guessed: a head refuses it.
TEST_CASE("a head refuses a token file whose token could be guessed or not sent", "[control_plane][auth]") {
  Cluster cluster;
  const std::string file = cluster.temp_dir() + "/head-token";
  auto start_with = [&](const std::string& token) {
    std::ofstream(file) << token << "\n";
    chmod(file.c_str(), 0600);
    return cluster.StartHead({"--token-file", file});
  };
  RunResult shorty = start_with("x");
  REQUIRE(shorty.exit_code == 1);
  REQUIRE(shorty.err == "clusterd start: token file " + file +
                            ": holds a token of 1 characters, which anyone who reaches the port could guess: use at "
                            "least 16 (or remove the file, and the head makes a random one)\n");
  RunResult spaced = start_with("correct horse battery staple");
  REQUIRE(spaced.exit_code == 1);
  REQUIRE(spaced.err == "clusterd start: token file " + file +
                            ": holds a byte a token cannot carry (0x20); use letters, digits and punctuation\n");
  REQUIRE(cluster.DaemonPids().empty());
  REQUIRE(start_with("0123456789abcdef").exit_code == 0);
  REQUIRE(cluster.Ctl({"status", "--token", "0123456789abcdef"}).exit_code == 0);
}

TEST_CASE("bad start input fails with one line, a non-zero exit and no daemon", "[control_plane][bad_input]") {
  Cluster cluster;
  auto start = [&](std::vector<std::string> flags) {
    std::vector<std::string> argv = {CLUSTERD_BIN, "start", "--temp-dir", cluster.temp_dir()};
    argv.insert(argv.end(), flags.begin(), flags.end());
    return Run(argv);
  };
  std::string port = std::to_string(cluster.port());

  RunResult unknown = start({"--head", "--port", port, "--frobnicate"});
  REQUIRE(unknown.exit_code == 2);
  REQUIRE(unknown.err == "clusterd start: unrecognised option '--frobnicate' (see clusterd start --help)\n");

  RunResult json = start({"--head", "--port", port, "--resources", "{oops"});
  REQUIRE(json.exit_code == 2);
  REQUIRE(json.err.find("clusterd start: --resources '{oops' is not a JSON object") == 0);

  RunResult negative = start({"--head", "--port", port, "--num-cpus", "-2"});
  REQUIRE(negative.exit_code == 2);
  REQUIRE(negative.err == "clusterd start: --num-cpus must be >= 0, got -2\n");

  RunResult both = start({"--head", "--address", "127.0.0.1:1"});
  REQUIRE(both.exit_code == 2);

  RunResult unreachable = start({"--address", "127.0.0.1:" + std::to_string(FreePort()), "--token", "x"});
  REQUIRE(unreachable.exit_code == 1);
  REQUIRE(unreachable.err.find("clusterd start: cannot reach a clusterd head at 127.0.0.1:") == 0);

  // Something listens there, but it is not clusterd: it hangs up at once.
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  socklen_t len = sizeof addr;
  getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len);
  listen(listener, 16);
  std::thread hang_up([listener] {
    for (int i = 0; i < 8; ++i) {
      int conn = accept(listener, nullptr, nullptr);
      if (conn < 0) return;
      close(conn);
    }
  });
  RunResult stranger = start({"--address", "127.0.0.1:" + std::to_string(ntohs(addr.sin_port)), "--token", "x"});
  shutdown(listener, SHUT_RDWR);
  close(listener);
  hang_up.join();
  REQUIRE(stranger.exit_code == 1);
  REQUIRE(stranger.err.find("clusterd start: ") == 0);

  REQUIRE(cluster.DaemonPids().empty());

  // A second head on a taken port fails; the first one is unharmed.
  REQUIRE(cluster.StartHead({"--num-cpus", "1"}).exit_code == 0);
  RunResult second = cluster.StartHead({"--num-cpus", "1"});
  REQUIRE(second.exit_code == 1);
  REQUIRE(second.err.find("another clusterd head is running") != std::string::npos);
  // A head in another temp dir on the same port is told the port is taken.
  char other_dir[] = "/tmp/clusterd-it-other-XXXXXX";
  std::string other = mkdtemp(other_dir);
  RunResult third = Run({CLUSTERD_BIN, "start", "--head", "--port", port, "--temp-dir", other});
  Run({"/bin/rm", "-rf", other});
  REQUIRE(third.exit_code == 1);
  // With no --node-ip-address it listens on every interface, as other machines need.
  REQUIRE(third.err.find("cannot listen on 0.0.0.0:" + port + ": the port is in use") != std::string::npos);
  REQUIRE(cluster.DaemonPids().size() == 1);
  REQUIRE(cluster.Status().nodes_size() == 1);

  RunResult no_head = Run({CLUSTERCTL_BIN, "status", "--address", "127.0.0.1:" + std::to_string(FreePort()), "--token", "x"});
  REQUIRE(no_head.exit_code == 1);
  REQUIRE(no_head.err.find("clusterctl: cannot reach a clusterd head at") == 0);
}

TEST_CASE("drain and stop-node change node states, clusterd stop leaves no clusterd process", "[control_plane]") {
  Cluster cluster;
  REQUIRE(cluster.StartHead({"--num-cpus", "1"}).exit_code == 0);
  REQUIRE(cluster.StartWorker("w1", {"--num-cpus", "1"}).exit_code == 0);
  REQUIRE(cluster.StartWorker("w2", {"--num-cpus", "1"}).exit_code == 0);

  REQUIRE(cluster.Ctl({"drain", "w1"}).exit_code == 0);
  REQUIRE(cluster.StateOf("w1") == DRAINING);
  RunResult missing = cluster.Ctl({"drain", "nope"});
  REQUIRE(missing.exit_code == 1);
  REQUIRE(missing.err == "clusterctl: no node named or with id 'nope'\n");

  // A job with a rank on w2 (the head holds the other; w1 drains).
  const std::string file = cluster.temp_dir() + "/spread.yaml";
  std::ofstream(file) << "name: spread\nentrypoint: sleep 100\nnum_workers: 2\nplacement: STRICT_SPREAD\n";
  const std::string job = SubmittedJobId(cluster.Ctl({"submit", file, "--json"}));
  REQUIRE(WaitFor([&] { return ParseJson<JobInfo>(cluster.Ctl({"job", job, "--json"})).state() == RUNNING; }, 20s));

  pid_t w2 = cluster.WorkerPid("w2");
  REQUIRE(cluster.Ctl({"stop-node", "w2"}).exit_code == 0);
  REQUIRE(WaitFor([&] { return !ProcessAlive(w2); }, 10s));
  REQUIRE(cluster.StateOf("w2") == DEAD);
  REQUIRE(NodeNamed(cluster.Status(), "w2").state_reason() == "stopped by clusterctl stop-node");
  // Its rank's end names stop-node, not a local `clusterd stop`.
  JobInfo ended = WaitUntilFinal(cluster, job, 30s);
  INFO(ended.reason());
  REQUIRE(ended.reason().find("while its node was draining (its node agent is stopping: clusterctl stop-node)") !=
          std::string::npos);

  std::vector<pid_t> pids = cluster.DaemonPids();
  REQUIRE(pids.size() == 2);
  RunResult stop = cluster.Stop();
  REQUIRE(stop.exit_code == 0);
  REQUIRE(stop.out == "Stopped 2 clusterd processes.\n");
  for (pid_t pid : pids) REQUIRE_FALSE(ProcessAlive(pid));
  REQUIRE(cluster.Stop().out.find("No clusterd process is running") == 0);
}
