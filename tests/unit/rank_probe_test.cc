// rank_probe.h on real processes: the CPU time of a process tree counts
// its children's, and a probe tells a Python process that catches SIGQUIT
// (the clusterd package's faulthandler) from one that does not, whose
// wait channel it reads all the same.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "daemon/agent/rank_probe.h"

using namespace clusterd;

namespace {

// Runs argv in a child in a process group of its own; the group is killed
// and the child reaped at the end of the scope.
struct Child {
  pid_t pid = -1;
  explicit Child(std::vector<std::string> argv) {
    pid = fork();
    if (pid == 0) {
      setpgid(0, 0);
      std::vector<char*> args;
      for (std::string& a : argv) args.push_back(a.data());
      args.push_back(nullptr);
      execv(args[0], args.data());
      _exit(127);
    }
  }
  ~Child() {
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
};

}  // namespace

TEST_CASE("a probe tells a Python process that catches SIGQUIT, and reads its wait channel", "[hang][agent]") {
  Child caught({"/usr/bin/python3", "-c",
                "import faulthandler, signal, time\nfaulthandler.register(signal.SIGQUIT)\nprint('ready', flush=True)\n"
                "time.sleep(30)"});
  Child plain({"/usr/bin/python3", "-c", "import time\ntime.sleep(30)"});
  Child other({"/bin/sleep", "30"});
  bool ready = false;
  for (int i = 0; i < 250 && !ready; ++i) {
    std::vector<ProcessProbe> tree = ProbeProcessTree(caught.pid, 4);
    ready = !tree.empty() && tree[0].catches_sigquit;
    if (!ready) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  REQUIRE(ready);
  const ProcessProbe python = ProbeProcessTree(caught.pid, 4).at(0);
  CHECK(python.pid == caught.pid);
  CHECK(python.python);
  CHECK(python.name.rfind("python", 0) == 0);
  CHECK_FALSE(python.wait_channel.empty());
  CHECK_FALSE(python.kernel_stack.empty());

  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // past the plain one's start
  const ProcessProbe uncaught = ProbeProcessTree(plain.pid, 4).at(0);
  CHECK(uncaught.python);
  CHECK_FALSE(uncaught.catches_sigquit);
  const ProcessProbe sleeper = ProbeProcessTree(other.pid, 4).at(0);
  CHECK_FALSE(sleeper.python);
  CHECK_FALSE(sleeper.catches_sigquit);
  CHECK(MostTelling({sleeper, python}).pid == caught.pid);
  CHECK(MostTelling({sleeper, uncaught}).pid == plain.pid);
}

TEST_CASE("a process tree's CPU time counts its children's and grows while they compute", "[hang][agent]") {
  // A shell whose child computes: the shell itself uses no CPU.
  Child shell({"/bin/sh", "-c", "/usr/bin/python3 -c 'while True: pass'; true"});
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto first = ProcessTreeCpuTicks({shell.pid, 999999999});
  REQUIRE(first.count(shell.pid) == 1);
  CHECK(first.count(999999999) == 0);  // gone: left out
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto second = ProcessTreeCpuTicks({shell.pid});
  CHECK(second.at(shell.pid) > first.at(shell.pid));
  // The shell's own stat holds none of it: the child's is what counts.
  std::vector<ProcessProbe> tree = ProbeProcessTree(shell.pid, 8);
  REQUIRE(tree.size() == 2);
  CHECK(MostTelling(tree).pid == tree[1].pid);
}
