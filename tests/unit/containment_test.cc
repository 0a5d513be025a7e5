// Containment and run_as below the daemon: the job
// file's run_as key, the node's rule for whom a job may run as, and one
// attempt's cgroup killing what left its process group and session.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include <catch2/catch.hpp>

#include "common/file_util.h"
#include "common/jobspec/job_spec.h"
#include "daemon/agent/attempt_cgroup.h"
#include "daemon/agent/run_as_user.h"

using namespace clusterd;

namespace {

// Running or asleep: not a zombie waiting for a parent that may never reap
// it (an orphan's parent is init, which in a container may not).
bool Live(pid_t pid) {
  auto stat = ReadWholeFile("/proc/" + std::to_string(pid) + "/stat");
  if (!stat.ok()) return false;
  size_t close = stat->rfind(')');
  return close != std::string::npos && close + 2 < stat->size() && (*stat)[close + 2] != 'Z' &&
         (*stat)[close + 2] != 'X';
}

}  // namespace

TEST_CASE("run_as in a job file: a user name is taken, anything else is refused naming the key", "[run_as]") {
  auto spec = ParseJobSpec("entrypoint: train\nrun_as: nobody\n", "job.yaml");
  REQUIRE(spec.ok());
  REQUIRE(spec->run_as() == "nobody");
  REQUIRE(ParseJobSpec("entrypoint: train\n", "job.yaml")->run_as().empty());
  for (const char* bad : {"\"../etc\"", "\"-rf\"", "\"a b\"", "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"", "[x]"}) {
    auto refused = ParseJobSpec(std::string("entrypoint: train\nrun_as: ") + bad + "\n", "job.yaml");
    INFO(bad);
    REQUIRE_FALSE(refused.ok());
    REQUIRE(refused.status().message().find("run_as") != std::string::npos);
  }
  JobSpec over_the_wire = *spec;
  over_the_wire.set_run_as("x/y");
  REQUIRE(ValidateJobSpec(over_the_wire).message().find("key 'run_as'") != std::string::npos);
}

TEST_CASE("run_as: the node's allowed_run_as decides whom a job may ask for, and the node's own run_as is taken as is",
          "[run_as]") {
  // root (uid 0) and nobody exist on every Debian system.
  SECTION("* lets a job ask for any user but root") {
    REQUIRE(ResolveRunAs("nobody", true, "*").ok());
    auto root = ResolveRunAs("root", true, "*");
    REQUIRE_FALSE(root.ok());
    REQUIRE(root.status().message().find("root (uid 0)") != std::string::npos);
  }
  SECTION("a list lets a job ask for the users it names, root only when named") {
    REQUIRE(ResolveRunAs("nobody", true, "alice, nobody").ok());
    auto unlisted = ResolveRunAs("nobody", true, "alice,bob");
    REQUIRE_FALSE(unlisted.ok());
    REQUIRE(unlisted.status().message().find("not in this node's allowed_run_as (alice,bob)") != std::string::npos);
    REQUIRE_FALSE(ResolveRunAs("nobody", true, "").ok());
    if (geteuid() == 0) REQUIRE(ResolveRunAs("root", true, "root").ok());
  }
  SECTION("the node's own run_as is not a job's asking") {
    if (geteuid() == 0) REQUIRE(ResolveRunAs("root", false, "").ok());
  }
  SECTION("a user the node lacks is named") {
    auto missing = ResolveRunAs("no-such-user-d7", false, "*");
    REQUIRE(missing.status().code() == Status::Code::kNotFound);
    REQUIRE(missing.status().message() == "run_as: user 'no-such-user-d7' does not exist");
  }
  SECTION("another user than the daemon's own needs a daemon running as root") {
    auto nobody = ResolveRunAs("nobody", true, "*");
    if (geteuid() == 0) {
      REQUIRE(nobody.ok());
      REQUIRE(nobody->uid != 0);
    } else {
      REQUIRE(nobody.status().message().find("needs the node's daemon to run as root") != std::string::npos);
    }
  }
}

TEST_CASE("containment: subreaper makes no cgroup, and an unknown mode is refused", "[containment]") {
  auto subreaper = Containment::Detect("subreaper", "clusterd-unit-test");
  REQUIRE(subreaper.ok());
  REQUIRE(subreaper->kind == ContainmentKind::kSubreaper);
  REQUIRE(subreaper->root.empty());
  REQUIRE(std::string(ContainmentName(subreaper->kind)) == "subreaper");
  auto bad = Containment::Detect("cgroups", "clusterd-unit-test");
  REQUIRE_FALSE(bad.ok());
  REQUIRE(bad.status().message() == "--containment: expected auto or subreaper, got 'cgroups'");
}

TEST_CASE("an attempt's cgroup kills a process that left its parent's group and session, and is removed",
          "[containment]") {
  auto containment = Containment::Detect("auto", "clusterd-unit-" + std::to_string(getpid()));
  REQUIRE(containment.ok());
  if (containment->kind == ContainmentKind::kSubreaper) {
    WARN("skipped: this machine makes no cgroups here (" << containment->why_not << ")");
    return;
  }
  AttemptCgroup cgroup(containment->kind, containment->root, "job-0001.attempt-0");
  REQUIRE(cgroup.Create().ok());
  // A child in the cgroup double-forks a grandchild into a session of its
  // own and tells its pid through a pipe; the child then exits.
  int ends[2];
  REQUIRE(pipe(ends) == 0);
  pid_t child = fork();
  if (child == 0) {
    if (!cgroup.Add(getpid()).ok()) _exit(2);
    pid_t grandchild = fork();
    if (grandchild == 0) {
      setsid();
      pid_t me = getpid();
      (void)!write(ends[1], &me, sizeof me);
      for (;;) pause();
    }
    _exit(0);
  }
  close(ends[1]);
  pid_t escapee = 0;
  REQUIRE(read(ends[0], &escapee, sizeof escapee) == sizeof escapee);
  close(ends[0]);
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  REQUIRE(WEXITSTATUS(status) == 0);
  REQUIRE(Live(escapee));
  REQUIRE(getsid(escapee) == escapee);

  REQUIRE(cgroup.KillAll() == 1);
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (Live(escapee) && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  REQUIRE_FALSE(Live(escapee));
  // Removed once the kernel is done with its last member.
  while (!cgroup.Remove() && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  REQUIRE(cgroup.Remove());
  containment->RemoveRoot();
}

TEST_CASE("a node agent's start removes the empty cgroups of agents that are gone, and leaves a live one's",
          "[containment]") {
  auto first = Containment::Detect("auto", "clusterd-" + std::to_string(getpid()));
  REQUIRE(first.ok());
  if (first->kind == ContainmentKind::kSubreaper) {
    WARN("skipped: this machine makes no cgroups here (" << first->why_not << ")");
    return;
  }
  const std::string base = first->root.substr(0, first->root.rfind('/'));
  pid_t gone = fork();
  if (gone == 0) _exit(0);
  REQUIRE(waitpid(gone, nullptr, 0) == gone);
  const std::string stale = base + "/clusterd-" + std::to_string(gone);
  REQUIRE(mkdir(stale.c_str(), 0755) == 0);
  REQUIRE(mkdir((stale + "/job-0001.attempt-0").c_str(), 0755) == 0);
  AttemptCgroup live_attempt(first->kind, first->root, "job-0002.attempt-0");
  REQUIRE(live_attempt.Create().ok());

  auto again = Containment::Detect("auto", "clusterd-" + std::to_string(getpid()));
  REQUIRE(again.ok());
  struct stat st {};
  REQUIRE(stat(stale.c_str(), &st) != 0);
  REQUIRE(stat(live_attempt.path().c_str(), &st) == 0);  // this process is alive
  REQUIRE(live_attempt.Remove());
  again->RemoveRoot();
}
