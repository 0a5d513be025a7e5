// Defects a review found, each shown on real processes so that it stays
// fixed: a report-socket client that hangs up at once, a rank whose log ends
// inside a multi-byte character, the token on a worker's command line, and
// a restarted head that launches a rank before it reports ready.
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>
#include <thread>

#include "harness.h"
#include "common/process_record.h"
#include "job_json.h"
#include "jobs_harness.h"

using namespace clusterd;
using namespace clusterd::testing;
using namespace std::chrono_literals;

namespace {

pid_t HeadPid(Cluster& cluster) {
  std::vector<pid_t> pids = cluster.DaemonPids();
  REQUIRE(pids.size() == 1);
  return pids[0];
}

}  // namespace

TEST_CASE("a report-socket client that hangs up at once does not take the daemon down (SIGPIPE)", "[hardening]") {
  Cluster cluster;
  REQUIRE(cluster.StartHead({"--num-cpus", "1"}).exit_code == 0);
  pid_t head = HeadPid(cluster);
  std::string path = cluster.temp_dir() + "/agent-" + std::to_string(head) + ".sock";
  for (int i = 0; i < 20; ++i) {
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
    REQUIRE(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    const char empty_frame[4] = {0, 0, 0, 0};  // a frame of nothing: the reply is an error
    // The agent may have refused this stranger at once (its slots for
    // processes that are no rank are few): then the send fails, not the test.
    (void)!send(fd, empty_frame, 4, MSG_NOSIGNAL);
    close(fd);  // gone before the reply is written
  }
  std::this_thread::sleep_for(300ms);
  REQUIRE(ProcessAlive(head));
  REQUIRE(cluster.Status().nodes(0).state() == ALIVE);
}

TEST_CASE("a rank whose log ends inside a multi-byte character fails with its tail, and its node stays ALIVE",
          "[hardening]") {
  Cluster cluster;
  REQUIRE(cluster.StartHead({"--num-cpus", "1"}).exit_code == 0);
  REQUIRE(cluster.StartWorker("w1", {"--num-cpus", "1"}).exit_code == 0);
  // A progress bar cut after the first byte of U+2588.
  std::string file = WriteJobFile(cluster, "bar", "entrypoint: printf 'progress 50%% \\342\\226'; exit 1\n"
                                              "resources_per_worker: {CPU: 1}\nnum_workers: 2\nplacement: STRICT_SPREAD\n");
  RunResult r = cluster.Ctl({"submit", file, "--follow", "--json"}, 60s);
  REQUIRE(r.exit_code == 1);
  JobInfo job = ParseJson<JobInfo>(cluster.Ctl({"job", SubmittedJobId(r), "--json"}));
  INFO(job.reason());
  REQUIRE(job.state() == FAILED);
  REQUIRE(job.reason().find("progress 50% \xEF\xBF\xBD\xEF\xBF\xBD") != std::string::npos);
  ClusterStatus status = cluster.Status();
  for (const auto& node : status.nodes()) REQUIRE(node.state() == ALIVE);
  REQUIRE(cluster.Ctl({"jobs"}).exit_code == 0);
}

TEST_CASE("a worker's and a following clusterctl's --token do not stay on their command lines", "[hardening]") {
  Cluster cluster;
  REQUIRE(cluster.StartHead({"--num-cpus", "1"}).exit_code == 0);
  std::string token = Slurp(cluster.temp_dir() + "/session_latest/token");
  token.pop_back();
  REQUIRE(cluster.StartWorker("w1", {"--num-cpus", "1", "--token", token}).exit_code == 0);
  std::string cmdline = Slurp("/proc/" + std::to_string(cluster.WorkerPid("w1")) + "/cmdline");
  REQUIRE(cmdline.find("--token") != std::string::npos);
  REQUIRE(cmdline.find(token) == std::string::npos);

  // `clusterctl logs -f` runs as long as its job: so long in `ps`.
  std::string path = cluster.temp_dir() + "/long.yaml";
  std::ofstream(path) << "name: long\nworking_dir: " << cluster.temp_dir()
                      << "\nworking_dir_mode: shared\nentrypoint: sleep 60\n";
  std::string job = SubmittedJobId(cluster.Ctl({"submit", path, "--json"}));
  const std::string address = "127.0.0.1:" + std::to_string(cluster.port());
  std::vector<std::string> args = {CLUSTERCTL_BIN, "--temp-dir", cluster.temp_dir(), "--address", address,
                                   "logs",         "-f",         job,                 "--token=" + token};
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  pid_t follower = 0;
  REQUIRE(posix_spawn(&follower, argv[0], nullptr, nullptr, argv.data(), environ) == 0);
  // Parsed, connected and scrubbed well within this; then it follows.
  std::string follower_cmdline;
  bool scrubbed = WaitFor([&] {
    follower_cmdline = Slurp("/proc/" + std::to_string(follower) + "/cmdline");
    return follower_cmdline.find("--token=x") != std::string::npos;
  }, std::chrono::seconds(10), std::chrono::milliseconds(20));
  kill(follower, SIGKILL);
  waitpid(follower, nullptr, 0);
  REQUIRE(scrubbed);
  REQUIRE(follower_cmdline.find(token) == std::string::npos);
  REQUIRE(cluster.Ctl({"stop", job}).exit_code == 0);
}

TEST_CASE("a restarted head that launches a rank before it is ready still returns from clusterd start",
          "[hardening]") {
  Cluster cluster;
  REQUIRE(cluster.StartHead({"--num-cpus", "1"}).exit_code == 0);
  // One job runs, one waits for the CPU; the head dies and comes back: the
  // waiting one starts while the new head is still starting.
  std::string job = WriteJobFile(cluster, "sleeper", "entrypoint: sleep 300\n");
  REQUIRE(cluster.Ctl({"submit", job}).exit_code == 0);
  REQUIRE(cluster.Ctl({"submit", job}).exit_code == 0);
  pid_t head = HeadPid(cluster);
  kill(head, SIGKILL);
  REQUIRE(WaitFor([&] { return !ProcessAlive(head); }, 10s));
  auto start = std::chrono::steady_clock::now();
  RunResult restarted = cluster.StartHead({"--num-cpus", "1"});
  INFO(restarted.err);
  REQUIRE(restarted.exit_code == 0);
  REQUIRE(MillisSince(start) < 20'000);
}

TEST_CASE("clusterd stop kills a recorded rank group only while it is still the rank's", "[hardening]") {
  Cluster cluster;
  std::string ranks = cluster.temp_dir() + "/session_2026-01-01_00-00-00_1/ranks";
  REQUIRE(Run({"/bin/mkdir", "-p", ranks}).exit_code == 0);
  // Three process groups of our own, as a dead daemon's ranks would be.
  auto group = [] {
    pid_t pid = fork();
    if (pid == 0) {
      setpgid(0, 0);
      execl("/bin/sleep", "sleep", "300", nullptr);
      _exit(127);
    }
    setpgid(pid, pid);
    return pid;
  };
  pid_t ours = group(), reused = group(), corrupt = group();
  REQUIRE(WaitFor([&] { return ProcessRecord::Of(ours).pid != 0; }, 5s));
  auto record = [&](pid_t pid, const std::string& text) {
    std::ofstream(ranks + "/" + std::to_string(pid)) << text << "\n";
  };
  record(ours, ProcessRecord::Of(ours).Format());
  ProcessRecord stranger = ProcessRecord::Of(reused);
  stranger.start_time += 1;  // the pid now names a process started at another time
  record(reused, stranger.Format());
  record(corrupt, "1 0 0");  // would be kill(-1)
  RunResult stopped = cluster.Stop();
  INFO(stopped.out << stopped.err);
  REQUIRE(stopped.exit_code == 0);
  REQUIRE(WaitFor([&] { return !ProcessAlive(ours); }, 5s));
  REQUIRE(ProcessAlive(reused));
  REQUIRE(ProcessAlive(corrupt));
  for (pid_t pid : {reused, corrupt}) kill(pid, SIGKILL);
}

TEST_CASE("a large config reaches the ranks as a file, not an environment string exec would refuse", "[hardening]") {
  Cluster cluster;
  REQUIRE(cluster.StartHead({"--num-cpus", "1"}).exit_code == 0);
  std::string big(200 * 1024, 'c');  // past Linux's 128 KiB per environment string
  std::string file = WriteJobFile(cluster, "bigconfig",
                             "entrypoint: 'test -z \"$CLUSTER_CONFIG\" && wc -c < \"$CLUSTER_CONFIG_FILE\"'\n"
                             "config: {blob: " + big + "}\n");
  RunResult r = cluster.Ctl({"submit", file, "--follow"}, 60s);
  INFO(r.out << r.err.substr(0, 2000));
  REQUIRE(r.exit_code == 0);
  REQUIRE(r.out.find(std::to_string(big.size() + 12)) != std::string::npos);  // {"blob":"..."}\n
}

namespace {

// A rank that reports once over the agent socket, as ctrain::report() does,
// claiming to be someone else; python3 speaks the 4-byte-length framing.
// (A YAML block scalar: the script is full of ": ".)
const char* kReportingRank = R"(|
  /usr/bin/python3 -c '
  import json, os, socket, struct
  s = socket.socket(socket.AF_UNIX); s.connect(os.environ["CLUSTER_AGENT_SOCKET"])
  body = json.dumps({"jobId": "job-9999", "attempt": 5, "rank": 3, "values": {"loss": 0.5}}).encode()
  s.sendall(struct.pack(">I", len(body)) + body)
  n = struct.unpack(">I", s.recv(4))[0]; print(s.recv(n).decode())
  ')";

int ConnectUnix(const std::string& path) {
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
  REQUIRE(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  return fd;
}

}  // namespace

TEST_CASE("the report socket is private, serves only this agent's ranks as themselves, and a stalled client "
          "holds up nobody",
          "[hardening]") {
  Cluster cluster;
  REQUIRE(cluster.StartHead({"--num-cpus", "1"}).exit_code == 0);
  std::string path = cluster.temp_dir() + "/agent-" + std::to_string(HeadPid(cluster)) + ".sock";
  struct stat st {};
  REQUIRE(stat(path.c_str(), &st) == 0);
  REQUIRE((st.st_mode & 0777) == 0600);

  // Not a rank: refused, with the reason.
  int stranger = ConnectUnix(path);
  std::string body = R"({"jobId":"job-0001","values":{"loss":1}})";
  std::string frame = {0, 0, 0, static_cast<char>(body.size())};
  frame += body;
  REQUIRE(write(stranger, frame.data(), frame.size()) == static_cast<ssize_t>(frame.size()));
  char reply[512] = {};
  REQUIRE(read(stranger, reply, sizeof reply - 1) > 4);
  REQUIRE(std::string(reply + 4).find("is not a rank this node agent runs") != std::string::npos);
  close(stranger);

  // Not even a report, and what the parser quotes back holds a line of its
  // own and an escape: shown, in the answer and the log, never obeyed (a
  // newline written as it is would forge a line of the agent's log).
  int forger = ConnectUnix(path);
  const std::string forged = "{\"bogus\n2026-11-28T12:00:00.000Z E FORGED \x1b[31mRED\":1}";
  std::string forged_frame = {0, 0, 0, static_cast<char>(forged.size())};
  forged_frame += forged;
  REQUIRE(write(forger, forged_frame.data(), forged_frame.size()) == static_cast<ssize_t>(forged_frame.size()));
  char forged_reply[1024] = {};
  REQUIRE(read(forger, forged_reply, sizeof forged_reply - 1) > 4);
  const std::string answer = forged_reply + 4;
  INFO(answer);
  REQUIRE(answer.find("not a MetricsReport") != std::string::npos);
  REQUIRE(answer.find("E FORGED") != std::string::npos);
  REQUIRE(answer.find('\n') == std::string::npos);
  REQUIRE(answer.find('\x1b') == std::string::npos);
  close(forger);
  const std::string logs = Run({"/bin/sh", "-c", "cat " + cluster.temp_dir() + "/session_latest/logs/*.log"}).out;
  REQUIRE(logs.find("E FORGED") != std::string::npos);
  REQUIRE(logs.find("\n2026-11-28T12:00:00.000Z E FORGED") == std::string::npos);
  REQUIRE(logs.find('\x1b') == std::string::npos);

  // A client that sends one byte and stalls; a rank reports meanwhile.
  int stalled = ConnectUnix(path);
  REQUIRE(write(stalled, "\0", 1) == 1);
  auto start = std::chrono::steady_clock::now();
  RunResult r = cluster.Ctl({"submit", WriteJobFile(cluster, "reporter", std::string("entrypoint: ") + kReportingRank + "\n"),
                             "--follow", "--json"},
                            60s);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  REQUIRE(r.out.find(R"({"ok":true})") != std::string::npos);
  REQUIRE(MillisSince(start) < 4000);  // not after the stalled client's 5 s
  close(stalled);
  std::string id = SubmittedJobId(r);
  MetricsReply metrics = ParseJson<MetricsReply>(cluster.Ctl({"metrics", id, "--json"}));
  REQUIRE(metrics.records_size() == 1);  // its own job, whatever it claimed
  REQUIRE(metrics.records(0).attempt() == 0);
  REQUIRE(metrics.records(0).rank() == 0);
}

TEST_CASE("a runtime or state folder that someone else made or can write is refused and one others can read is made private",
          "[hardening]") {
  char made[] = "/tmp/clusterd-it-planted-XXXXXX";
  std::string base = mkdtemp(made);
  auto start = [&](const std::string& temp, const std::string& state) {
    return Run({CLUSTERD_BIN, "start", "--head", "--port", std::to_string(FreePort()), "--node-ip-address",
                "127.0.0.1", "--num-cpus", "0", "--num-gpus", "0", "--temp-dir", temp, "--state-dir", state});
  };
  // Someone else's folder, with a planted token in it.
  std::string theirs = base + "/theirs";
  REQUIRE(Run({"/bin/mkdir", "-p", theirs + "/state"}).exit_code == 0);
  std::ofstream(theirs + "/state/token") << "planted\n";
  REQUIRE(Run({"/bin/chown", "-R", "65534:65534", theirs}).exit_code == 0);
  RunResult r = start(theirs, base + "/mine-state");
  INFO(r.err);
  REQUIRE(r.exit_code != 0);
  REQUIRE(r.err.find("refusing " + theirs + ": it belongs to uid 65534") != std::string::npos);
  r = start(base + "/mine", theirs + "/state");
  REQUIRE(r.exit_code != 0);
  REQUIRE(r.err.find("it belongs to uid 65534") != std::string::npos);
  // Ours, but anyone may write it.
  std::string open = base + "/open";
  REQUIRE(Run({"/bin/mkdir", "-m", "1777", open}).exit_code == 0);
  r = start(open, base + "/s2");
  REQUIRE(r.exit_code != 0);
  REQUIRE(r.err.find("group or others may write it") != std::string::npos);
  // A symlink to somewhere else.
  REQUIRE(symlink("/tmp", (base + "/link").c_str()) == 0);
  r = start(base + "/link", base + "/s3");
  REQUIRE(r.exit_code != 0);
  REQUIRE(r.err.find("it is a symlink") != std::string::npos);
  // A fresh folder is made private.
  r = start(base + "/fresh", base + "/fresh-state");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  struct stat st {};
  REQUIRE(stat((base + "/fresh-state").c_str(), &st) == 0);
  REQUIRE((st.st_mode & 0777) == 0700);
  REQUIRE(Run({CLUSTERD_BIN, "stop", "--force", "--temp-dir", base + "/fresh"}).exit_code == 0);
  // Ours, but made readable by others by hand (a copied state folder, a
  // umask 022 mkdir): made private again, the token kept.
  REQUIRE(chmod((base + "/fresh-state").c_str(), 0755) == 0);
  REQUIRE(chmod((base + "/fresh-state/token").c_str(), 0644) == 0);
  const std::string token = Slurp(base + "/fresh-state/token");
  r = start(base + "/fresh", base + "/fresh-state");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  REQUIRE(stat((base + "/fresh-state").c_str(), &st) == 0);
  REQUIRE((st.st_mode & 0777) == 0700);
  REQUIRE(stat((base + "/fresh-state/token").c_str(), &st) == 0);
  REQUIRE((st.st_mode & 0777) == 0600);
  REQUIRE(Slurp(base + "/fresh-state/token") == token);
  REQUIRE(Run({CLUSTERD_BIN, "stop", "--force", "--temp-dir", base + "/fresh"}).exit_code == 0);
  Run({"/bin/rm", "-rf", base});
}

// A worker whose pid file cannot be written (a full disk) must not say it
// has joined: `clusterd stop` could then not find it.
TEST_CASE("a daemon that cannot record its pid for clusterd stop does not start", "[hardening]") {
  Cluster cluster;
  REQUIRE(cluster.StartHead({"--num-cpus", "0", "--num-gpus", "0"}).exit_code == 0);
  const std::string pids = cluster.temp_dir() + "/session_latest/pids";
  REQUIRE(rename(pids.c_str(), (pids + ".kept").c_str()) == 0);
  std::ofstream(pids) << "not a folder\n";
  RunResult worker = cluster.StartWorker("w1", {"--num-cpus", "1"});
  unlink(pids.c_str());
  REQUIRE(rename((pids + ".kept").c_str(), pids.c_str()) == 0);
  INFO(worker.err);
  REQUIRE(worker.exit_code == 1);
  REQUIRE(worker.err.rfind("clusterd start: cannot record this daemon for clusterd stop: cannot write " +
                           cluster.temp_dir() + "/session_", 0) == 0);
  REQUIRE(worker.err.find("/pids/worker-") != std::string::npos);
  REQUIRE(Run({"/usr/bin/pgrep", "-f", "--", "--temp-dir " + cluster.temp_dir() + " --node-name w1"}).exit_code == 1);
  REQUIRE(cluster.Status().nodes_size() == 0);  // the head runs no agent, and no half-started worker joined
}
