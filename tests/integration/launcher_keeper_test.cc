// The launcher process and its keepers (launcher_process.h), driven through
// the agent's own LauncherClient with the real clusterd-launcher.
#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <set>
#include <thread>

#include "daemon/agent/launcher_client.h"
#include "tests/unit/temp_dir.h"

using namespace clusterd;
using namespace std::chrono_literals;

namespace {

// The state letter of /proc/<pid>/stat ('Z' for a zombie), or 0 when gone.
char ProcessState(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return 0;
  const size_t close = line.rfind(')');
  return close == std::string::npos || close + 2 >= line.size() ? 0 : line[close + 2];
}

}  // namespace

// A keeper whose ranks have all ended exits by itself, their exits queued
// on its socket. The next launch of the same attempt finds it gone: every
// exit it queued must still reach the agent, or the job waits forever for
// those ranks.
TEST_CASE("the exits a keeper sent before it exited reach the agent when the next launch of its attempt finds it gone",
          "[launcher]") {
  testing::TempDir dir("clusterd-launcher");
  const std::string go = (dir.path / "go").string();
  LauncherClient launcher(CLUSTERD_LAUNCHER_BIN);
  REQUIRE(launcher.Start().ok());
  auto rank = [&](const std::string& name, const std::string& script) {
    SpawnRequest request;
    request.argv = {"/bin/sh", "-c", script};
    request.log_path = (dir.path / (name + ".log")).string();
    request.attempt = AttemptKey("job-1", 0);
    return request;
  };
  const std::string wait_for_go = "while [ ! -e " + go + " ]; do sleep 0.01; done";
  std::vector<Result<pid_t>> first = launcher.SpawnAll({rank("a", wait_for_go), rank("b", wait_for_go)});
  REQUIRE(first.at(0).ok());
  REQUIRE(first.at(1).ok());
  const pid_t keeper = launcher.ParentOf(*first[0]);
  REQUIRE(keeper > 0);
  REQUIRE(launcher.ParentOf(*first[1]) == keeper);

  // The launcher holds still while both ranks end and their keeper exits
  // (a zombie, since its stopped parent cannot reap it).
  const pid_t launcher_pid = launcher.launcher_pid();
  REQUIRE(kill(launcher_pid, SIGSTOP) == 0);
  std::ofstream(go).close();
  const auto give_up = std::chrono::steady_clock::now() + 20s;
  while (ProcessState(keeper) != 'Z' && std::chrono::steady_clock::now() < give_up) std::this_thread::sleep_for(10ms);
  REQUIRE(ProcessState(keeper) == 'Z');

  // The next launch is queued before the launcher wakes: it reads one of
  // the keeper's packets, then the launch, which finds the keeper gone.
  std::thread resume([launcher_pid] {
    std::this_thread::sleep_for(300ms);
    kill(launcher_pid, SIGCONT);
  });
  Result<pid_t> next = launcher.Spawn(rank("c", "true"));
  resume.join();
  REQUIRE(next.ok());

  std::set<pid_t> ended;
  const std::set<pid_t> all = {*first[0], *first[1], *next};
  while (ended != all && std::chrono::steady_clock::now() < give_up) {
    for (const ChildExit& exit : launcher.Reap()) {
      REQUIRE(exit.exit_code == 0);
      ended.insert(exit.pid);
    }
    std::this_thread::sleep_for(10ms);
  }
  REQUIRE(ended == all);
}
