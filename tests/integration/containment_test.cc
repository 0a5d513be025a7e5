// What a rank starts to escape its job (setsid, a double
// fork, a cleared environment: `setsid env -i ...`) ends with its attempt,
// whether the job is stopped or the attempt fails and the job retries; with
// the node's cgroups (where this machine lets the daemon make them) and
// with the keeper process alone (--containment subreaper). And run_as:
// ranks run as the user the job names, or fail with the reason why not.
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include <catch2/catch.hpp>

#include "harness.h"
#include "job_json.h"

using namespace clusterd;
using namespace clusterd::testing;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

// What leaves a process outside its job every way it can at once: a
// double fork (its parent exits, so it is an orphan), setsid (a session
// and process group of its own) and env -i (no CLUSTER_JOB_ID to find it
// by). That process writes its pid to `pid_file` and becomes `sleep 1000`.
std::string Escape(const std::string& pid_file) {
  return "( setsid env -i /bin/sh -c 'echo $$ > " + pid_file + ".tmp; mv " + pid_file + ".tmp " + pid_file +
         "; exec sleep 1000' & )\n";
}

std::string Script(Cluster& cluster, const std::string& name, const std::string& body) {
  const std::string script = cluster.temp_dir() + "/" + name + ".sh";
  std::ofstream(script) << "#!/bin/sh\n" << body;
  REQUIRE(chmod(script.c_str(), 0755) == 0);
  return script;
}

pid_t PidIn(const std::string& path) {
  std::string text = Slurp(path);
  return text.empty() ? 0 : static_cast<pid_t>(std::stol(text));
}

// Whether `pid` is still the escaped `sleep 1000` (not a reused pid).
bool EscapeeAlive(pid_t pid) {
  return pid > 0 && ProcessAlive(pid) &&
         Slurp("/proc/" + std::to_string(pid) + "/cmdline").rfind(std::string("sleep\0", 6), 0) == 0;
}

// The node's containment label, from `clusterctl status --json`.
std::string ContainmentOf(Cluster& cluster) {
  ClusterStatus status = cluster.Status();
  REQUIRE(status.nodes_size() >= 1);
  auto it = status.nodes(0).labels().find("clusterd.containment");
  return it == status.nodes(0).labels().end() ? "" : it->second;
}

// The escapee really escaped: its environment is empty and its session is
// not the rank's; and where the node has cgroups, it is in the cgroup of
// the keeper that holds its attempt (named for the keeper: "keeper-<n>").
void RequireEscaped(pid_t pid, const std::string& containment) {
  REQUIRE(Slurp("/proc/" + std::to_string(pid) + "/environ").find("CLUSTER_JOB_ID") == std::string::npos);
  REQUIRE(getsid(pid) == pid);
  if (containment != "subreaper") {
    INFO(Slurp("/proc/" + std::to_string(pid) + "/cgroup"));
    REQUIRE(Slurp("/proc/" + std::to_string(pid) + "/cgroup").find("/keeper-") != std::string::npos);
  }
}

}  // namespace

TEST_CASE("a process a rank started with setsid env -i and a double fork ends when its job is stopped",
          "[containment]") {
  const std::string mode = GENERATE("auto", "subreaper");
  Cluster cluster;
  REQUIRE(cluster.StartHead({"--num-cpus", "1", "--containment", mode}).exit_code == 0);
  const std::string containment = ContainmentOf(cluster);
  INFO("containment: " << containment);
  if (mode == "subreaper") REQUIRE(containment == "subreaper");
  if (mode == "auto") REQUIRE(!containment.empty());
  const std::string pid_file = cluster.temp_dir() + "/escapee";
  const std::string script = Script(cluster, "stopped", Escape(pid_file) + "sleep 1000\n");
  const std::string job_file = cluster.temp_dir() + "/stopped.yaml";
  std::ofstream(job_file) << "name: stopped\nentrypoint: " << script << "\n";
  const std::string job = SubmittedJobId(cluster.Ctl({"submit", job_file, "--json"}));
  REQUIRE(WaitFor([&] { return EscapeeAlive(PidIn(pid_file)); }, 30s, 50ms));
  const pid_t escapee = PidIn(pid_file);
  RequireEscaped(escapee, containment);

  REQUIRE(cluster.Ctl({"stop", job}).exit_code == 0);
  // The stop's grace (5 s by default) and then its end: a generous bound.
  const bool gone = WaitFor([&] { return !EscapeeAlive(escapee); }, 30s, 50ms);
  if (!gone) kill(escapee, SIGKILL);
  REQUIRE(gone);
  REQUIRE(WaitUntilFinal(cluster, job, 30s).state() == STOPPED);
}

TEST_CASE("a process a rank started with setsid env -i and a double fork ends when its attempt fails, before the "
          "retry",
          "[containment]") {
  const std::string mode = GENERATE("auto", "subreaper");
  Cluster cluster;
  REQUIRE(cluster.StartHead({"--num-cpus", "1", "--containment", mode}).exit_code == 0);
  const std::string containment = ContainmentOf(cluster);
  INFO("containment: " << containment);
  const std::string pid_file = cluster.temp_dir() + "/escapee";
  // Attempt 0 leaves its escapee and fails; attempt 1 succeeds.
  const std::string script = Script(cluster, "retried",
                                    "if [ \"$CLUSTER_ATTEMPT\" = 0 ]; then\n" + Escape(pid_file) + "while [ ! -e " +
                                        pid_file + " ]; do sleep 0.05; done\nexit 1\nfi\n");
  const std::string job_file = cluster.temp_dir() + "/retried.yaml";
  std::ofstream(job_file) << "name: retried\nmax_failures: 1\nrestart_delay: {initial: 100ms}\nentrypoint: " << script
                          << "\n";
  const std::string job = SubmittedJobId(cluster.Ctl({"submit", job_file, "--json"}));
  REQUIRE(WaitFor([&] { return EscapeeAlive(PidIn(pid_file)); }, 30s, 20ms));
  const pid_t escapee = PidIn(pid_file);
  const bool gone = WaitFor([&] { return !EscapeeAlive(escapee); }, 30s, 50ms);
  if (!gone) kill(escapee, SIGKILL);
  REQUIRE(gone);
  JobInfo ended = WaitUntilFinal(cluster, job, 60s);
  INFO(ended.reason());
  REQUIRE(ended.state() == SUCCEEDED);
  REQUIRE(ended.attempts_size() == 2);
}

TEST_CASE("a process a rank started with setsid env -i and a double fork ends when its node agent is SIGKILLed",
          "[containment]") {
  const std::string mode = GENERATE("auto", "subreaper");
  Cluster cluster;
  REQUIRE(cluster.StartHead({"--num-cpus", "0", "--num-gpus", "0"}).exit_code == 0);
  REQUIRE(cluster.StartWorker("w1", {"--num-cpus", "1", "--containment", mode}).exit_code == 0);
  const pid_t worker = cluster.WorkerPid("w1");
  REQUIRE(worker > 0);
  const std::string pid_file = cluster.temp_dir() + "/escapee";
  const std::string script = Script(cluster, "orphaned", Escape(pid_file) + "sleep 1000\n");
  const std::string job_file = cluster.temp_dir() + "/orphaned.yaml";
  std::ofstream(job_file) << "name: orphaned\nentrypoint: " << script << "\n";
  const std::string job = SubmittedJobId(cluster.Ctl({"submit", job_file, "--json"}));
  REQUIRE(WaitFor([&] { return EscapeeAlive(PidIn(pid_file)); }, 30s, 50ms));
  const pid_t escapee = PidIn(pid_file);
  REQUIRE(getsid(escapee) == escapee);
  pid_t rank = 0;
  REQUIRE(WaitFor([&] {
    JobInfo shown = ParseJson<JobInfo>(cluster.Ctl({"job", job, "--json"}));
    rank = shown.attempts_size() == 1 && shown.attempts(0).ranks_size() == 1 ? shown.attempts(0).ranks(0).pid() : 0;
    return rank > 0;
  }, 30s, 50ms));

  REQUIRE(kill(worker, SIGKILL) == 0);
  // Its launcher sees the agent's socket close and ends every attempt: a
  // bound for a loaded machine, not the grace of a stop (there is none).
  const bool gone = WaitFor([&] { return !EscapeeAlive(escapee) && !ProcessAlive(rank); }, 15s, 50ms);
  if (!gone) {
    kill(escapee, SIGKILL);
    kill(rank, SIGKILL);
  }
  REQUIRE(gone);
}

TEST_CASE("run_as: the ranks run as the user the job names and rank 0's outputs still come back", "[run_as]") {
  passwd* nobody = getpwnam("nobody");
  if (geteuid() != 0 || nobody == nullptr) {
    WARN("skipped: needs root and a user nobody");
    return;
  }
  Cluster cluster;
  REQUIRE(cluster.StartHead({"--num-cpus", "1"}).exit_code == 0);
  fs::path dir = fs::path(cluster.temp_dir()) / "as_nobody";
  fs::create_directories(dir);
  // A rank running as root could hard-link a file only root may read into
  // its outputs, which then go to the submitter. As nobody it cannot make the link.
  std::ofstream(dir / "run.sh") << "#!/bin/sh\nset -e\nid -u > uid.txt\necho \"rank uid $(id -u)\"\n"
                                << "if ln /etc/shadow shadow 2>/dev/null; then echo linked; else echo no link; fi\n"
                                << "mkdir -p results\necho written > results/out.txt\n"
                                // Where a preemption notice would be: a rank must reach it as its user.
                                << "if (cd \"$(dirname \"$CLUSTER_PREEMPTION_FILE\")\") 2>/dev/null; "
                                << "then echo notice reachable; else echo notice unreachable; fi\n";
  fs::permissions(dir / "run.sh", fs::perms(0755));
  std::ofstream(dir.string() + ".yaml") << "name: as_nobody\nentrypoint: ./run.sh\nworking_dir: " << dir.string()
                                        << "\nrun_as: nobody\noutputs: [uid.txt, results/]\nmax_failures: 0\n";
  RunResult r = cluster.Ctl({"submit", dir.string() + ".yaml", "--follow", "--json"}, 60s);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  REQUIRE(Slurp((dir / "uid.txt").string()) == std::to_string(nobody->pw_uid) + "\n");
  REQUIRE(Slurp((dir / "results" / "out.txt").string()) == "written\n");
  const std::string logs = cluster.Ctl({"logs", SubmittedJobId(r)}).out;
  REQUIRE(logs.find("rank uid " + std::to_string(nobody->pw_uid)) != std::string::npos);
  if (Slurp("/proc/sys/fs/protected_hardlinks") == "1\n") REQUIRE(logs.find("no link") != std::string::npos);
  REQUIRE(logs.find("notice reachable") != std::string::npos);
}

TEST_CASE("run_as: a user the node lacks, or root where the node allows any user but root, fails the job saying why",
          "[run_as]") {
  if (geteuid() != 0) {
    WARN("skipped: needs root");
    return;
  }
  struct Case {
    std::string user;
    std::string reason;
  };
  const Case c = GENERATE(Case{"no-such-user-d7", "user 'no-such-user-d7' does not exist on node"},
                          Case{"root", "user 'root' is root (uid 0), which this node's allowed_run_as"});
  Cluster cluster;
  REQUIRE(cluster.StartHead({"--num-cpus", "1"}).exit_code == 0);
  const std::string marker = cluster.temp_dir() + "/ran";
  const std::string job_file = cluster.temp_dir() + "/refused.yaml";
  std::ofstream(job_file) << "name: refused\nmax_failures: 0\nrun_as: " << c.user << "\nentrypoint: \"touch "
                          << marker << "\"\n";
  const std::string job = SubmittedJobId(cluster.Ctl({"submit", job_file, "--json"}));
  JobInfo ended = WaitUntilFinal(cluster, job, 30s);
  INFO(ended.reason());
  REQUIRE(ended.state() == FAILED);
  REQUIRE(ended.reason().find(c.reason) != std::string::npos);
  REQUIRE_FALSE(fs::exists(marker));  // nothing ran, as root or as anyone
}
