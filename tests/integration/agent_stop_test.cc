// The node agent on real processes: `clusterd stop` leaves nothing a rank
// started, wherever it went (its group, a new session), and an agent whose
// head is stopped keeps its stream and its ranks (one whose head's machine
// stops acknowledging drops it: machines_heartbeat_test.cc).
#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "harness.h"
#include "job_json.h"

using namespace clusterd;
using namespace clusterd::testing;
using namespace std::chrono_literals;

namespace {

// Live processes whose environment says they belong to job_id: its ranks
// and everything they started, in whatever group or session.
std::vector<pid_t> ProcessesOfJob(const std::string& job_id) {
  std::vector<pid_t> out;
  std::string entry = "CLUSTER_JOB_ID=" + job_id;
  entry.push_back('\0');
  DIR* proc = opendir("/proc");
  while (dirent* e = readdir(proc)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    std::string env = '\0' + Slurp(std::string("/proc/") + e->d_name + "/environ");
    if (env.find('\0' + entry) != std::string::npos && ProcessAlive(static_cast<pid_t>(pid))) out.push_back(pid);
  }
  closedir(proc);
  return out;
}

// Whether `count` processes of the job run, in two sessions at least (once
// setsid, which runs after the fork, has made its own).
bool StraysStarted(const std::string& job, size_t count) {
  return WaitFor([&] {
    std::vector<pid_t> processes = ProcessesOfJob(job);
    std::set<pid_t> sessions;
    for (pid_t pid : processes) sessions.insert(getsid(pid));
    return processes.size() >= count && sessions.size() >= 2;
  }, 30s, 50ms);
}

// The launcher process (clusterd-launcher) that the daemon `parent` started.
pid_t LauncherOf(pid_t parent) {
  DIR* proc = opendir("/proc");
  pid_t found = 0;
  while (dirent* e = readdir(proc)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    std::string stat = Slurp(std::string("/proc/") + e->d_name + "/stat");
    std::string cmdline = Slurp(std::string("/proc/") + e->d_name + "/cmdline");
    size_t close = stat.rfind(')');
    if (close == std::string::npos || cmdline.find("clusterd-launcher") == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 1));
    char state = 0;
    long ppid = 0;
    if (rest >> state >> ppid && ppid == parent) found = static_cast<pid_t>(pid);
  }
  closedir(proc);
  return found;
}

}  // namespace

TEST_CASE("clusterd stop leaves no process of a rank whose children piped, went to the background or setsid away",
          "[agent]") {
  Cluster cluster;
  REQUIRE(cluster.StartHead({"--num-cpus", "1"}).exit_code == 0);
  std::string path = cluster.temp_dir() + "/strays.yaml";
  std::ofstream(path) << "name: strays\nworking_dir: " << cluster.temp_dir() << "\nworking_dir_mode: shared\n"
                      << "entrypoint: \"sh -c 'sleep 1000 | sleep 1000 & setsid sleep 1000 & wait'\"\n";
  RunResult submitted = cluster.Ctl({"submit", path, "--json"});
  std::string job = SubmittedJobId(submitted);
  // The shell and its three sleeps, one of them in a session of its own.
  REQUIRE(StraysStarted(job, 4));
  RunResult stopped = cluster.Stop();
  INFO(stopped.out << stopped.err);
  REQUIRE(stopped.exit_code == 0);
  std::vector<pid_t> left = ProcessesOfJob(job);
  INFO("left: " << left.size());
  REQUIRE(left.empty());
}

// A head stopped for longer than the agents' keepalive must keep their
// streams: each one dropped would count as its node's death at the head's
// first turn back, and every running job would fail. Where the head's
// machine still acknowledges (here: the same kernel), the agent waits.
TEST_CASE("an agent keeps its stream to a head stopped (SIGSTOP) past its keepalive and the job running meanwhile "
          "succeeds in its first attempt",
          "[agent]") {
  Cluster cluster;
  REQUIRE(cluster.StartHead({"--num-cpus", "0", "--num-gpus", "0"}).exit_code == 0);
  std::vector<pid_t> pids = cluster.DaemonPids();
  REQUIRE(pids.size() == 1);
  pid_t head = pids[0];
  REQUIRE(cluster.StartWorker("w1", {"--num-cpus", "1"}).exit_code == 0);
  pid_t worker = cluster.WorkerPid("w1");
  REQUIRE(worker > 0);
  std::string log = cluster.temp_dir() + "/session_latest/logs/worker-" + std::to_string(worker) + ".log";
  // (Its first "registered" line may come before its log moves to this file.)
  REQUIRE(WaitFor([&] { return !Slurp(log).empty(); }, 10s, 50ms));
  const std::string go = cluster.temp_dir() + "/go";
  std::string path = cluster.temp_dir() + "/outlasts.yaml";
  std::ofstream(path) << "name: outlasts\nworking_dir: " << cluster.temp_dir() << "\nworking_dir_mode: shared\n"
                      // ~200 KB/s of log: the stopped head's receive buffer fills, which must not
                      // make the agent take its machine for gone.
                      << "max_failures: 0\nentrypoint: \"while [ ! -e " << go
                      << " ]; do head -c 20000 /dev/zero | tr '\\\\0' x; echo; sleep 0.1; done; echo done\"\n";
  std::string job = SubmittedJobId(cluster.Ctl({"submit", path, "--json"}));
  REQUIRE(WaitFor([&] { return !ProcessesOfJob(job).empty(); }, 30s, 50ms));
  auto incarnation_of_w1 = [&] {
    const ClusterStatus status = cluster.Status();
    for (const NodeInfo& node : status.nodes()) {
      if (node.name() == "w1") return node.incarnation();
    }
    return int64_t{-1};
  };
  const int64_t incarnation = incarnation_of_w1();
  REQUIRE(incarnation > 0);

  kill(head, SIGSTOP);
  auto start = std::chrono::steady_clock::now();
  // keepalive_ms + keepalive_timeout_ms is 4 s by default; the rest is slack for a loaded machine.
  bool warned = WaitFor([&] { return Slurp(log).find("keeping the stream") != std::string::npos; }, 15s, 50ms);
  const int64_t took = MillisSince(start);
  // Twice the keepalive in all, then the head runs again.
  std::this_thread::sleep_for(std::chrono::milliseconds(std::max<int64_t>(0, 8'000 - MillisSince(start))));
  kill(head, SIGCONT);
  INFO("warned after " << took << " ms; worker log:\n" << Slurp(log));
  REQUIRE(warned);
  REQUIRE(took < 12'000);
  REQUIRE(Slurp(log).find("dropping the stream") == std::string::npos);
  REQUIRE(Slurp(log).find("lost the head") == std::string::npos);
  REQUIRE(WaitFor([&] { return Slurp(log).find("answers again") != std::string::npos; }, 10s, 50ms));

  std::ofstream(go) << "";
  JobInfo ended = WaitUntilFinal(cluster, job, 30s);
  INFO(ended.reason());
  REQUIRE(ended.state() == SUCCEEDED);
  REQUIRE(ended.attempts_size() == 1);
  REQUIRE(cluster.StateOf("w1") == ALIVE);
  REQUIRE(incarnation_of_w1() == incarnation);
}

TEST_CASE("what a finished rank left outside its group (setsid) is killed when its attempt ends here, not at stop",
          "[agent]") {
  Cluster cluster;
  REQUIRE(cluster.StartHead({"--num-cpus", "1"}).exit_code == 0);
  std::string path = cluster.temp_dir() + "/leftover.yaml";
  std::ofstream(path) << "name: leftover\nworking_dir: " << cluster.temp_dir() << "\nworking_dir_mode: shared\n"
                      << "entrypoint: \"sh -c 'setsid sleep 1000 & sleep 1; exit 0'\"\n";
  RunResult r = cluster.Ctl({"submit", path, "--follow", "--json"}, 60s);
  REQUIRE(r.exit_code == 0);
  std::string job = SubmittedJobId(r);
  bool gone = WaitFor([&] { return ProcessesOfJob(job).empty(); }, 10s, 50ms);
  INFO("left: " << ProcessesOfJob(job).size());
  REQUIRE(gone);
  REQUIRE(cluster.Status().nodes(0).state() == ALIVE);
}

TEST_CASE("clusterd stop leaves nothing of a rank that ignores SIGTERM and has a child in its own session",
          "[agent]") {
  Cluster cluster;
  // The daemon's grace and clusterd stop's are the same 2 s: the daemon must
  // still get to SIGKILL the rank and sweep before stop gives up on it.
  REQUIRE(cluster.StartHead({"--num-cpus", "1", "--stop-grace-ms", "2000"}).exit_code == 0);
  std::string path = cluster.temp_dir() + "/stubborn.yaml";
  std::ofstream(path) << "name: stubborn\nworking_dir: " << cluster.temp_dir() << "\nworking_dir_mode: shared\n"
                      << "entrypoint: \"trap '' TERM; setsid sleep 1000 & while true; do sleep 0.2; done\"\n";
  std::string job = SubmittedJobId(cluster.Ctl({"submit", path, "--json"}));
  REQUIRE(WaitFor([&] { return ProcessesOfJob(job).size() >= 2; }, 30s, 50ms));
  auto start = std::chrono::steady_clock::now();
  RunResult stopped = cluster.Stop({"--grace-period", "2"});
  REQUIRE(MillisSince(start) >= 2000);  // it did hold out through the grace period
  INFO(stopped.out << stopped.err);
  REQUIRE(stopped.exit_code == 0);
  REQUIRE(stopped.out.find("after the grace period") == std::string::npos);  // the daemon ended by itself
  std::vector<pid_t> left = ProcessesOfJob(job);
  INFO("left: " << left.size());
  REQUIRE(left.empty());
}

// `clusterd stop --grace-period S` is the ranks' grace, whatever
// --stop-grace-ms the daemon started with (the SIGTERM carries it).
TEST_CASE("clusterd stop --grace-period gives the ranks that grace and not the daemon's own", "[agent]") {
  const bool shorter = GENERATE(true, false);
  Cluster cluster;
  REQUIRE(cluster.StartHead({"--num-cpus", "1", "--stop-grace-ms", shorter ? "20000" : "500"}).exit_code == 0);
  std::string path = cluster.temp_dir() + "/stubborn.yaml";
  std::ofstream(path) << "name: stubborn\nworking_dir: " << cluster.temp_dir() << "\nworking_dir_mode: shared\n"
                      << "entrypoint: \"trap '' TERM; while true; do sleep 0.2; done\"\n";
  std::string job = SubmittedJobId(cluster.Ctl({"submit", path, "--json"}));
  REQUIRE(WaitFor([&] { return !ProcessesOfJob(job).empty(); }, 30s, 50ms));
  auto start = std::chrono::steady_clock::now();
  RunResult stopped = cluster.Stop({"--grace-period", shorter ? "0.5" : "3"});
  const int64_t took_ms = MillisSince(start);
  INFO(stopped.out << stopped.err << "took " << took_ms << " ms");
  REQUIRE(stopped.exit_code == 0);
  REQUIRE(stopped.out.find("after the grace period") == std::string::npos);  // the daemon ended by itself
  REQUIRE(ProcessesOfJob(job).empty());
  if (shorter) {
    REQUIRE(took_ms < 15'000);  // not the daemon's 20 s; an outer bound for a loaded machine
  } else {
    REQUIRE(took_ms >= 3000);  // the rank held out 3 s, not the daemon's 0.5
  }
}

// `sh -c` (a string entrypoint) dies of the SIGTERM at once; `clusterd stop`
// must not go on as if the rank were done, killing its program mid-save.
TEST_CASE("clusterd stop gives a string entrypoint's program the grace period once its shell has died", "[agent]") {
  Cluster cluster;
  REQUIRE(cluster.StartHead({"--num-cpus", "1"}).exit_code == 0);
  const std::string marker = cluster.temp_dir() + "/saved", script = cluster.temp_dir() + "/saver.sh";
  std::ofstream(script) << "#!/bin/bash\ntrap 'sleep 1; echo saved > " << marker << "; exit 0' TERM\n"
                        << "echo ready\nsleep 300 & wait\n";
  REQUIRE(chmod(script.c_str(), 0755) == 0);
  std::string path = cluster.temp_dir() + "/saver.yaml";
  std::ofstream(path) << "name: saver\nentrypoint: \"true; " << script << "\"\n";
  std::string job = SubmittedJobId(cluster.Ctl({"submit", path, "--json"}));
  REQUIRE(WaitFor([&] { return cluster.Ctl({"logs", job}).out.find("ready") != std::string::npos; }, 30s, 50ms));
  RunResult stopped = cluster.Stop();
  INFO(stopped.out << stopped.err);
  REQUIRE(stopped.exit_code == 0);
  REQUIRE(std::ifstream(marker).good());  // saved within the 5 s grace, before the daemon was gone
  REQUIRE(ProcessesOfJob(job).empty());
}

TEST_CASE("an agent SIGKILLed while its rank's children left the rank's group leaves no process of the job",
          "[agent][launcher]") {
  Cluster cluster;
  REQUIRE(cluster.StartHead({"--num-cpus", "0", "--num-gpus", "0"}).exit_code == 0);
  REQUIRE(cluster.StartWorker("w1", {"--num-cpus", "1"}).exit_code == 0);
  pid_t worker = cluster.WorkerPid("w1");
  REQUIRE(worker > 0);
  std::string path = cluster.temp_dir() + "/strays.yaml";
  // A pipe, a setsid'd sleep and a double-forked one (its parent exits at once).
  std::ofstream(path) << "name: strays\nworking_dir: " << cluster.temp_dir() << "\nworking_dir_mode: shared\n"
                      << "entrypoint: \"sh -c 'sleep 1000 | sleep 1000 & setsid sleep 1000 & (sleep 1000 &); wait'\"\n";
  std::string job = SubmittedJobId(cluster.Ctl({"submit", path, "--json"}));
  REQUIRE(StraysStarted(job, 5));
  pid_t launcher = LauncherOf(worker);
  REQUIRE(launcher > 0);

  REQUIRE(kill(worker, SIGKILL) == 0);
  // The launcher sees its socket close, kills everything below it, and goes.
  bool clean = WaitFor([&] { return ProcessesOfJob(job).empty(); }, 15s, 50ms);
  INFO("left: " << ProcessesOfJob(job).size());
  REQUIRE(clean);
  REQUIRE(WaitFor([&] { return !ProcessAlive(launcher); }, 15s, 50ms));
}

TEST_CASE("a launcher process killed under a running rank fails that attempt, and the next job gets a new one",
          "[agent][launcher]") {
  Cluster cluster;
  REQUIRE(cluster.StartHead({"--num-cpus", "1"}).exit_code == 0);
  std::vector<pid_t> daemons = cluster.DaemonPids();
  REQUIRE(daemons.size() == 1);
  std::string path = cluster.temp_dir() + "/sleeper.yaml";
  std::ofstream(path) << "name: sleeper\nworking_dir: " << cluster.temp_dir() << "\nworking_dir_mode: shared\n"
                      << "entrypoint: [sleep, '1000']\n";
  std::string job = SubmittedJobId(cluster.Ctl({"submit", path, "--json"}));
  // Running as the head knows it: the launcher has told the agent the rank's
  // pid. (A launcher killed between making the rank and telling it is a
  // rank that "could not start", a different case.)
  REQUIRE(WaitFor([&] {
    JobInfo shown = ParseJson<JobInfo>(cluster.Ctl({"job", job, "--json"}));
    return ProcessesOfJob(job).size() == 1 && shown.attempts_size() == 1 && shown.attempts(0).ranks_size() == 1 &&
           shown.attempts(0).ranks(0).pid() > 0;
  }, 30s, 50ms));
  pid_t launcher = LauncherOf(daemons[0]);
  REQUIRE(launcher > 0);

  REQUIRE(kill(launcher, SIGKILL) == 0);
  JobInfo info = WaitUntilFinal(cluster, job, 30s);
  INFO(info.reason());
  REQUIRE(info.state() == FAILED);
  REQUIRE(info.reason().find("signal 9") != std::string::npos);
  REQUIRE(ProcessesOfJob(job).empty());

  std::ofstream(path) << "name: after\nworking_dir: " << cluster.temp_dir() << "\nworking_dir_mode: shared\n"
                      << "entrypoint: [/bin/true]\n";
  std::string next = SubmittedJobId(cluster.Ctl({"submit", path, "--json"}));
  info = WaitUntilFinal(cluster, next, 30s);
  INFO(info.reason());
  REQUIRE(info.state() == SUCCEEDED);
  pid_t second = LauncherOf(daemons[0]);
  REQUIRE(second > 0);
  REQUIRE(second != launcher);
}

TEST_CASE("a worker started again on a machine that runs clusterd is refused and names it but a named node joins",
          "[agent]") {
  Cluster cluster;
  REQUIRE(cluster.StartHead({"--num-cpus", "1"}).exit_code == 0);
  REQUIRE(cluster.StartWorker("w1", {"--num-cpus", "1"}).exit_code == 0);
  REQUIRE(cluster.DaemonPids().size() == 2);
  // The join command as the head prints it, no --node-name: the machine's
  // resources are offered already.
  RunResult again = Run({CLUSTERD_BIN, "start", "--address", cluster.address(), "--temp-dir", cluster.temp_dir(),
                         "--node-ip-address", "127.0.0.1", "--num-cpus", "1"});
  INFO(again.out << again.err);
  REQUIRE(again.exit_code == 1);
  REQUIRE(again.err.find("already runs on this machine under " + cluster.temp_dir()) != std::string::npos);
  REQUIRE(again.err.find("--node-name") != std::string::npos);
  REQUIRE(cluster.DaemonPids().size() == 2);  // nothing started
  // Several nodes on one machine, each named, as the quick start runs them.
  REQUIRE(cluster.StartWorker("w2", {"--num-cpus", "1"}).exit_code == 0);
  REQUIRE(cluster.DaemonPids().size() == 3);
}
