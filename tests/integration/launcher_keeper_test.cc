// The launcher process and its keepers (launcher_process.h), driven through
// the agent's own LauncherClient with the real clusterd-launcher.
#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
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

// Every exit of `pids` as the launcher reports them, within 20 s.
std::map<pid_t, ChildExit> AwaitExits(LauncherClient& launcher, const std::set<pid_t>& pids) {
  std::map<pid_t, ChildExit> ended;
  const auto give_up = std::chrono::steady_clock::now() + 20s;
  while (ended.size() < pids.size() && std::chrono::steady_clock::now() < give_up) {
    for (const ChildExit& exit : launcher.Reap()) {
      if (pids.count(exit.pid)) ended[exit.pid] = exit;
    }
    std::this_thread::sleep_for(10ms);
  }
  return ended;
}

// A shell line that waits until the file `go` exists: a rank that is
// surely still running while the test reads its parent.
std::string WaitFor(const std::string& go) { return "while [ ! -e " + go + " ]; do sleep 0.01; done"; }

SpawnRequest RankOf(const testing::TempDir& dir, const std::string& attempt, const std::string& name,
                    const std::string& script) {
  SpawnRequest request;
  request.argv = {"/bin/sh", "-c", script};
  request.log_path = (dir.path / (name + ".log")).string();
  request.attempt = attempt;
  return request;
}

// The keepers below the launcher now (idle ones included).
std::set<pid_t> Keepers(pid_t launcher) {
  std::set<pid_t> out;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    const size_t open = line.find('('), close = line.rfind(')');
    if (open == std::string::npos || close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 2));
    char state;
    pid_t parent;
    rest >> state >> parent;
    if (parent == launcher && line.substr(open + 1, close - open - 1) == "clusterd-keep") out.insert(std::stoi(name));
  }
  return out;
}

}  // namespace

// A keeper with nothing of its attempt left below it is handed the next
// attempt instead of a new keeper being forked: a stream of short jobs pays
// no fork and exit of a keeper each.
TEST_CASE("a keeper whose attempt left nothing takes the next attempt: the same process, no fork", "[launcher]") {
  testing::TempDir dir("clusterd-launcher");
  LauncherClient launcher(CLUSTERD_LAUNCHER_BIN);
  REQUIRE(launcher.Start().ok());
  const std::string go = (dir.path / "go").string();
  Result<pid_t> first = launcher.Spawn(RankOf(dir, AttemptKey("job-1", 0), "a", WaitFor(go) + "; exit 3"));
  REQUIRE(first.ok());
  const pid_t keeper = launcher.ParentOf(*first);
  REQUIRE(keeper > 0);
  std::ofstream(go).close();
  auto ended = AwaitExits(launcher, {*first});
  REQUIRE(ended.size() == 1);
  REQUIRE(ended[*first].exit_code == 3);
  // Once its keeper is idle (its exit is the launcher's word for it), nothing
  // of job-1 is held: the agent has no leftovers of it to kill.
  const auto give_up = std::chrono::steady_clock::now() + 20s;
  while (launcher.MayHaveLeftovers() && std::chrono::steady_clock::now() < give_up) {
    launcher.Reap();
    std::this_thread::sleep_for(10ms);
  }
  REQUIRE_FALSE(launcher.MayHaveLeftovers());
  REQUIRE(launcher.KillLeftovers("job-1", 0) == 0);

  Result<pid_t> second = launcher.Spawn(RankOf(dir, AttemptKey("job-2", 0), "b", "sleep 30"));
  REQUIRE(second.ok());
  CHECK(launcher.ParentOf(*second) == keeper);
  CHECK(Keepers(launcher.launcher_pid()) == std::set<pid_t>{keeper});
  // It reports job-2's rank as its own.
  launcher.SignalGroup(*second, SIGKILL);
  ended = AwaitExits(launcher, {*second});
  REQUIRE(ended.size() == 1);
  CHECK(ended[*second].signal == SIGKILL);
}

// What a rank started and left running (in a session of its own, out of
// its group) keeps its keeper from going idle: the next attempt gets a new
// keeper, and the leftover dies when the agent ends its attempt.
TEST_CASE("a keeper with a rank's leftover below it is not handed on, and the leftover dies with its attempt",
          "[launcher]") {
  testing::TempDir dir("clusterd-launcher");
  const std::string pid_file = (dir.path / "leftover.pid").string();
  const std::string go = (dir.path / "go").string();
  LauncherClient launcher(CLUSTERD_LAUNCHER_BIN);
  REQUIRE(launcher.Start().ok());
  Result<pid_t> first = launcher.Spawn(
      RankOf(dir, AttemptKey("job-1", 0), "a", "setsid sleep 60 & echo $! > " + pid_file + "; " + WaitFor(go)));
  REQUIRE(first.ok());
  const pid_t keeper = launcher.ParentOf(*first);
  REQUIRE(keeper > 0);
  std::ofstream(go).close();
  REQUIRE(AwaitExits(launcher, {*first}).size() == 1);
  std::this_thread::sleep_for(200ms);  // room for a keeper to go idle, were it wrongly to
  Result<pid_t> second = launcher.Spawn(RankOf(dir, AttemptKey("job-2", 0), "b", WaitFor(go + "2")));
  REQUIRE(second.ok());
  CHECK(launcher.ParentOf(*second) != keeper);
  CHECK(launcher.ParentOf(*second) > 0);
  REQUIRE(launcher.MayHaveLeftovers());

  std::ifstream in(pid_file);
  pid_t leftover = 0;
  REQUIRE(in >> leftover);
  REQUIRE(kill(leftover, 0) == 0);
  CHECK(launcher.KillLeftovers("job-1", 0) >= 1);
  const auto give_up = std::chrono::steady_clock::now() + 20s;
  while (ProcessState(leftover) != 0 && ProcessState(leftover) != 'Z' && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(10ms);
  }
  CHECK((ProcessState(leftover) == 0 || ProcessState(leftover) == 'Z'));
}

// A keeper whose ranks have all ended says it is idle, their exits queued
// on its socket before that word. A launch of the same attempt that the
// launcher takes before it reads the word goes to the same keeper, which
// serves it; every exit it queued still reaches the agent.
TEST_CASE("a launch that reaches its attempt's keeper as it goes idle is served by it, and no exit is lost",
          "[launcher]") {
  testing::TempDir dir("clusterd-launcher");
  const std::string go = (dir.path / "go").string();
  LauncherClient launcher(CLUSTERD_LAUNCHER_BIN);
  REQUIRE(launcher.Start().ok());
  const std::string attempt = AttemptKey("job-1", 0);
  std::vector<Result<pid_t>> first =
      launcher.SpawnAll({RankOf(dir, attempt, "a", WaitFor(go)), RankOf(dir, attempt, "b", WaitFor(go))});
  REQUIRE(first.at(0).ok());
  REQUIRE(first.at(1).ok());
  const pid_t keeper = launcher.ParentOf(*first[0]);
  REQUIRE(keeper > 0);
  REQUIRE(launcher.ParentOf(*first[1]) == keeper);

  // The launcher holds still while both ranks end and their keeper, with
  // nothing left below it, goes idle.
  const pid_t launcher_pid = launcher.launcher_pid();
  REQUIRE(kill(launcher_pid, SIGSTOP) == 0);
  std::ofstream(go).close();
  const auto give_up = std::chrono::steady_clock::now() + 20s;
  while ((ProcessState(*first[0]) != 0 || ProcessState(*first[1]) != 0) && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(10ms);  // until their keeper has reaped both
  }
  std::this_thread::sleep_for(200ms);  // and said so, and that it is idle

  // The next launch is queued before the launcher wakes.
  std::thread resume([launcher_pid] {
    std::this_thread::sleep_for(300ms);
    kill(launcher_pid, SIGCONT);
  });
  Result<pid_t> next = launcher.Spawn(RankOf(dir, attempt, "c", WaitFor(go + "2")));
  resume.join();
  REQUIRE(next.ok());
  CHECK(launcher.ParentOf(*next) == keeper);
  std::ofstream(go + "2").close();
  auto ended = AwaitExits(launcher, {*first[0], *first[1], *next});
  REQUIRE(ended.size() == 3);
  for (const auto& [pid, exit] : ended) CHECK(exit.exit_code == 0);
}
