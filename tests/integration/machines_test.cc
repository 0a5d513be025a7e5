// Simulated machines (machines.h) on their own: network, files and host name
// are per machine, and a real cluster across them sees pulled cables and
// whole-machine crashes. Needs root; skipped (ctest: "Skipped") elsewhere.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <google/protobuf/util/json_util.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "job_json.h"
#include "machines.h"
#include "machines_cluster.h"

using namespace clusterd;
using namespace clusterd::testing;
using namespace std::chrono_literals;

TEST_CASE("machines: each has its own network, files and host name", "[machines]") {
  REQUIRE_SIM_NETWORK();
  SimNetwork net;
  Machine& w1 = net.AddMachine("w1");
  Machine& w2 = net.AddMachine("w2");
  Machine& client = net.AddMachine("client");
  REQUIRE(w1.ip() != w2.ip());

  SECTION("eth0 carries the machine's address and the default route") {
    RunResult addr = w1.Run({"ip", "-4", "-o", "addr", "show", "dev", "eth0"});
    REQUIRE(addr.out.find(w1.ip() + "/24") != std::string::npos);
    RunResult route = w1.Run({"ip", "route", "get", "192.0.2.1"});
    REQUIRE(route.out.find("dev eth0 src " + w1.ip()) != std::string::npos);
  }

  SECTION("TCP reaches another machine by its address, never by loopback") {
    std::string received = "/tmp/clusterd-machines-nc-" + std::to_string(getpid());
    pid_t listener = w1.Spawn({"nc", "-l", "-k", "7000"}, {}, received, "/dev/null");
    REQUIRE(WaitFor([&] { return client.Shell("echo hello | nc -N -w 2 " + w1.ip() + " 7000").exit_code == 0; },
                    10s, 50ms));
    REQUIRE(WaitFor([&] { return Slurp(received).find("hello") != std::string::npos; }, 5s));
    // w1 listens on its own loopback too, but the client's loopback is the client's.
    REQUIRE(w1.Run({"nc", "-z", "-w", "2", "127.0.0.1", "7000"}).exit_code == 0);
    REQUIRE(client.Run({"nc", "-z", "-w", "2", "127.0.0.1", "7000"}).exit_code != 0);
    w1.KillAll();
    REQUIRE(!ProcessAlive(listener));
    unlink(received.c_str());
  }

  SECTION("/tmp is private to each machine; HostPath reaches it from the test") {
    std::string name = "/tmp/only-on-w1-" + std::to_string(getpid());
    REQUIRE(w1.Shell("echo secret > " + name).exit_code == 0);
    REQUIRE(w1.Run({"test", "-f", name}).exit_code == 0);
    REQUIRE(client.Run({"test", "-e", name}).exit_code != 0);
    REQUIRE(!Exists(name));  // not in the test's own /tmp either
    REQUIRE(Slurp(w1.HostPath(name)) == "secret\n");
    std::ofstream(client.HostPath("/tmp/from-test")) << "hi";
    REQUIRE(client.Run({"cat", "/tmp/from-test"}).out == "hi");
    // A head's default state folder, too: each machine has its own.
    const std::string state = "/var/lib/clusterd/only-on-w1-" + std::to_string(getpid());
    REQUIRE(w1.Shell("echo mine > " + state).exit_code == 0);
    REQUIRE(client.Run({"test", "-e", state}).exit_code != 0);
    REQUIRE(!Exists(state));
    // The checkout and the build stay visible, and the build's programs come first.
    REQUIRE(w1.Run({"test", "-d", CLUSTERD_SOURCE_DIR}).exit_code == 0);
    REQUIRE(Trimmed(w1.Shell("command -v clusterd").out) == CLUSTERD_BIN);
    REQUIRE(Trimmed(w1.Shell("echo $HOME; pwd").out) == "/tmp/home\n/tmp/home");
  }

  SECTION("the host name is the machine's and resolves to loopback there, as on stock Debian") {
    REQUIRE(Trimmed(w2.Run({"hostname"}).out) == "w2");
    RunResult hosts = w2.Run({"getent", "hosts", "w2"});
    REQUIRE(hosts.out.rfind("127.0.1.1", 0) == 0);
    REQUIRE(Trimmed(client.Run({"hostname"}).out) == "client");
    // Other machines resolve by name to their address.
    REQUIRE(client.Run({"getent", "hosts", "w2"}).out.rfind(w2.ip() + " ", 0) == 0);
    // No DNS server: an unknown name fails at once rather than after seconds.
    auto start = std::chrono::steady_clock::now();
    REQUIRE(client.Run({"getent", "hosts", "no-such-machine"}).exit_code != 0);
    REQUIRE(MillisSince(start) < 1000);
  }
}

TEST_CASE("machines: a cluster across them shows three nodes ALIVE at the client", "[machines]") {
  REQUIRE_SIM_NETWORK();
  SimCluster c;
  ClusterStatus status;
  REQUIRE(WaitFor(
      [&] {
        auto now = c.Status();
        if (now) status = *now;
        return now && now->nodes_size() == 3;
      },
      10s, 100ms));
  std::map<std::string, std::string> ips = {{"head", c.head.ip()}, {"w1", c.w1.ip()}, {"w2", c.w2.ip()}};
  for (const auto& node : status.nodes()) {
    INFO(node.name());
    REQUIRE(node.state() == ALIVE);
    REQUIRE(node.address() == ips[node.name()]);
  }
  REQUIRE(c.StateOf("head") == ALIVE);
  REQUIRE(c.StateOf("w1") == ALIVE);
  REQUIRE(c.StateOf("w2") == ALIVE);
}

TEST_CASE("machines: a pulled cable makes a node DEAD, plugging it back ALIVE", "[machines]") {
  REQUIRE_SIM_NETWORK();
  SimCluster c;
  REQUIRE(c.WaitForState("w1", ALIVE, 10s));

  auto cut = std::chrono::steady_clock::now();
  c.w1.CutLink();
  // Node timeout 2 s after the last heartbeat, plus slack for a loaded machine.
  REQUIRE(c.WaitForState("w1", DEAD, 6s));
  WARN("w1 DEAD " << MillisSince(cut) << " ms after its cable was pulled");
  REQUIRE(c.StateOf("w2") == ALIVE);

  auto restored = std::chrono::steady_clock::now();
  c.w1.RestoreLink();
  REQUIRE(c.WaitForState("w1", ALIVE, 15s));
  WARN("w1 ALIVE " << MillisSince(restored) << " ms after its cable was plugged back");
}

// A worker taken out while its head is unreachable has nobody to say
// goodbye to: its stop must not wait out the whole linger meant for a head
// that is there but slow to read (3 s, common/net/frame_channel.cc).
TEST_CASE("machines: clusterd stop on a worker whose head's cable is pulled gives up on the head within seconds",
          "[machines]") {
  REQUIRE_SIM_NETWORK();
  SimCluster c;
  REQUIRE(c.WaitForState("w1", ALIVE, 10s));
  const std::string unheard = "confirming it heard this node leave";
  // With the head there, it reads the node's last frames and closes: no word of it.
  REQUIRE(c.w2.Run({"clusterd", "stop"}).exit_code == 0);
  RunResult w2_log = c.w2.Shell("cat /tmp/clusterd/session_latest/logs/*.log");
  INFO(w2_log.out);
  REQUIRE(w2_log.out.find("clusterd worker stopped") != std::string::npos);
  REQUIRE(w2_log.out.find(unheard) == std::string::npos);

  c.head.CutLink();
  auto stop = std::chrono::steady_clock::now();
  RunResult stopped = c.w1.Run({"clusterd", "stop"}, {}, 30s);
  const int64_t stop_ms = MillisSince(stop);
  INFO(stopped.out << stopped.err);
  REQUIRE(stopped.exit_code == 0);
  REQUIRE(c.w1.Pids().empty());
  WARN("clusterd stop took " << stop_ms << " ms with the head's cable pulled");
  // The kernel timed the unacknowledged goodbye out; the linger did not.
  RunResult log = c.w1.Shell("cat /tmp/clusterd/session_latest/logs/*.log");
  INFO(log.out);
  REQUIRE(log.out.find(unheard + " (head " + c.address() + ": the stream to the head ended: Connection timed out)") !=
          std::string::npos);
  REQUIRE(stop_ms < 10'000);  // an outer bound for a loaded machine; the figure is the WARN above
  c.head.RestoreLink();
}

TEST_CASE("machines: a crashed machine is DEAD, and ALIVE once its worker restarts", "[machines]") {
  REQUIRE_SIM_NETWORK();
  SimCluster c;
  REQUIRE(c.WaitForState("w2", ALIVE, 10s));
  REQUIRE(!c.w2.Pids().empty());
  auto crash = std::chrono::steady_clock::now();

  SECTION("its processes die: their kernel still closes the stream, seen at once") {
    c.w2.KillAll();
    REQUIRE(c.w2.Pids().empty());
    REQUIRE(c.WaitForState("w2", DEAD, 6s));
    WARN("w2 DEAD " << MillisSince(crash) << " ms after its processes were killed");
  }
  SECTION("it loses power: nothing reaches the head, which must time it out") {
    c.w2.CutLink();
    c.w2.KillAll();
    REQUIRE(c.WaitForState("w2", DEAD, 6s));
    WARN("w2 DEAD " << MillisSince(crash) << " ms after it lost power");
    c.w2.RestoreLink();
  }

  // It comes back with its files (its stale session folder) in place.
  c.StartWorker(c.w2);
  REQUIRE(c.WaitForState("w2", ALIVE, 10s));
  REQUIRE(c.StateOf("w1") == ALIVE);
}

// The lost-exit case of docs/RELIABILITY.md item 4 across machines: the
// head's machine crashes, both ranks exit on their own machines while it is
// down, and the head that comes back counts their exits (and their output)
// instead of failing the job at its adoption deadline.
TEST_CASE("machines: ranks that exit while the head's machine is down count once it is back", "[machines]") {
  REQUIRE_SIM_NETWORK();
  SimCluster c(/*head_cpus=*/0);
  // Each rank waits for a file on its own machine; max_failures 1, so a lost
  // exit would show as a second attempt, not only as a failure.
  c.WhenReadyWriteJob("name: outlives-head\n"
                      "entrypoint: while [ ! -e /tmp/go ]; do sleep 0.1; done; echo \"rank $RANK done on $CLUSTER_NODE_IP\"\n"
                      "working_dir: .\nnum_workers: 2\nplacement: STRICT_SPREAD\nmax_failures: 1\n");
  RunResult submitted = c.Ctl("submit job.yaml --json");
  std::string id = SubmittedJobId(submitted);
  c.WaitTwoRanksRunning(id);

  c.head.KillAll();
  REQUIRE(c.head.Pids().empty());
  for (Machine* w : {&c.w1, &c.w2}) std::ofstream(w->HostPath("/tmp/go")) << "go";
  // Both ranks are gone before the head is back.
  REQUIRE(WaitFor([&] {
    for (Machine* w : {&c.w1, &c.w2}) {
      for (pid_t pid : w->Pids()) {
        std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline");
        std::string cmdline((std::istreambuf_iterator<char>(in)), {});
        if (cmdline.find("/tmp/go") != std::string::npos) return false;
      }
    }
    return true;
  }, 10s, 100ms));

  c.StartHead();
  JobInfo job = c.WaitUntilFinal(id, 60s);
  INFO(job.reason());
  REQUIRE(job.state() == SUCCEEDED);
  REQUIRE(job.attempts_size() == 1);
  for (int rank : {0, 1}) {
    RunResult logs;
    bool shipped = WaitFor([&] {
      logs = c.Ctl("logs " + id + " --rank " + std::to_string(rank));
      return logs.out.find("rank " + std::to_string(rank) + " done on ") != std::string::npos;
    }, 20s, 500ms);
    INFO("rank " << rank << ": " << logs.exit_code << " " << logs.out << logs.err);
    REQUIRE(shipped);
  }
}

// What a DVC stage runs: `clusterctl submit --follow` on the client, while
// the head's machine crashes and its daemon is started again mid-job. The
// ranks finish while it is down; --follow must ride out the outage, print
// every line once, bring the output back and exit 0.
TEST_CASE("machines: submit --follow on the client rides out a head restart: every line once and its output and exit 0",
          "[machines]") {
  REQUIRE_SIM_NETWORK();
  // Its machine crashes, or it is stopped (clusterd stop there: the calls
  // under way end CANCELLED, not UNAVAILABLE).
  const bool crash = GENERATE(true, false);
  SimCluster c(/*head_cpus=*/0);
  c.WhenReadyWriteJob("name: follow-outage\n"
                      "entrypoint: for i in 1 2 3 4; do echo \"r$RANK line $i\"; done; "
                      "while [ ! -e /tmp/go ]; do sleep 0.1; done; "
                      "for i in 5 6 7 8; do echo \"r$RANK line $i\"; done; "
                      "if [ $RANK = 0 ]; then echo made-after-the-outage > result.txt; fi\n"
                      "working_dir: .\nnum_workers: 2\nplacement: STRICT_SPREAD\noutputs: [result.txt]\n");
  const std::string out_path = "/tmp/" + c.net.prefix() + "follow.out";
  const std::string err_path = "/tmp/" + c.net.prefix() + "follow.err";
  pid_t follow = c.client.Spawn({"sh", "-c", "cd /tmp/job && exec clusterctl submit job.yaml --follow"},
                                {{"CLUSTER_ADDRESS", c.address()}, {"CLUSTER_TOKEN", c.token}}, out_path, err_path);
  REQUIRE(WaitFor([&] {
    std::string out = Slurp(out_path);
    return out.find("r0 line 4") != std::string::npos && out.find("r1 line 4") != std::string::npos;
  }, 60s, 100ms));

  if (crash) {
    c.head.KillAll();
  } else {
    REQUIRE(c.head.Run({"clusterd", "stop"}).exit_code == 0);
  }
  for (Machine* w : {&c.w1, &c.w2}) std::ofstream(w->HostPath("/tmp/go")) << "go";
  REQUIRE(WaitFor([&] { return Slurp(err_path).find("trying again") != std::string::npos; }, 10s, 100ms));
  int status = 0;
  REQUIRE(waitpid(follow, &status, WNOHANG) == 0);  // still following, through the outage
  c.StartHead();

  REQUIRE(WaitFor([&] { return waitpid(follow, &status, WNOHANG) == follow; }, 90s, 200ms));
  const std::string out = Slurp(out_path), err = Slurp(err_path);
  INFO(out << "\n--- stderr:\n" << err);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  for (int rank : {0, 1}) {
    size_t last = 0;
    for (int i = 1; i <= 8; ++i) {
      const std::string line = "r" + std::to_string(rank) + " line " + std::to_string(i) + "\n";
      const size_t at = out.find(line);
      INFO(line);
      REQUIRE(at != std::string::npos);
      REQUIRE(out.find(line, at + 1) == std::string::npos);  // once
      REQUIRE(at >= last);                                    // in order
      last = at;
    }
  }
  REQUIRE(Trimmed(Slurp(c.client.HostPath("/tmp/job/result.txt"))) == "made-after-the-outage");
  // The ranks ran on through the outage: adopted, not restarted.
  ListJobsReply jobs = ParseJson<ListJobsReply>(c.Ctl("jobs --json"));
  REQUIRE(jobs.jobs_size() == 1);
  REQUIRE(jobs.jobs(0).attempts_size() == 1);
  unlink(out_path.c_str());
  unlink(err_path.c_str());
}

TEST_CASE("machines: a destroyed SimNetwork leaves no namespace and no process behind", "[machines]") {
  REQUIRE_SIM_NETWORK();
  std::string prefix;
  std::vector<pid_t> pids;
  {
    SimNetwork net;
    Machine& a = net.AddMachine("a");
    Machine& b = net.AddMachine("b");
    prefix = net.prefix();
    a.Spawn({"sleep", "300"}, {}, "/dev/null", "/dev/null");
    // Detached like a daemon: it ends up the test's child (subreaper), not b's shell's.
    REQUIRE(b.Shell("setsid sleep 300 > /dev/null 2>&1 < /dev/null &").exit_code == 0);
    REQUIRE(WaitFor([&] { return a.Pids().size() == 1 && b.Pids().size() == 1; }, 5s));
    pids = {a.holder(), b.holder(), a.Pids()[0], b.Pids()[0]};
    REQUIRE(Run({"/bin/sh", "-c", "ip netns list"}).out.find(prefix) != std::string::npos);
  }
  RunResult list = Run({"/bin/sh", "-c", "ip netns list"});
  INFO(list.out);
  REQUIRE(list.out.find(prefix) == std::string::npos);
  for (pid_t pid : pids) {
    INFO(pid);
    REQUIRE(!ProcessAlive(pid));
  }
}
