// The rank runner driven like the head's core (rank_runner_harness.h): no
// processes and no sleeps. Launch, exit, kill with its grace period, stop
// (drain), reports tied to their ranks, output, records. The head going
// away and coming back: rank_runner_away_test.cc.
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <algorithm>
#include <cstdlib>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>
#include <fstream>

#include "common/file_util.h"
#include "daemon/agent/python_package.h"
#include "daemon/agent/rank_environment.h"
#include "daemon/agent/rank_runner.h"
#include "fake_launcher.h"
#include "head_harness.h"
#include "temp_tree.h"

using namespace clusterd;
using namespace clusterd::testing;

#include "rank_runner_harness.h"


TEST_CASE("a launched rank is reported started, its log shipped, and its exit reported with its tail",
          "[rank_runner]") {
  QuietLogs quiet;
  Runner r;
  r.runner->Launch(Runner::Launch("j1", 1, {0, 1}));
  REQUIRE(r.launcher.spawned.size() == 2);
  REQUIRE(r.Starts().size() == 2);
  pid_t rank0 = r.Starts()[0].pid();
  REQUIRE(r.Starts()[0].rank() == 0);
  const SpawnRequest& request = r.launcher.spawned[0].second;
  REQUIRE(EnvironmentValue(request.env, "CLUSTER_AGENT_SOCKET").value_or("(unset)") == r.dir.Path("agent.sock"));
  REQUIRE(r.runner->LiveRanks().size() == 2);

  r.launcher.Print(rank0, "epoch 1\nloss went up\n");
  r.runner->Tick();
  REQUIRE(r.Logs() == "epoch 1\nloss went up\n");
  REQUIRE(r.RankRecords() == std::make_pair(2, 2));  // both running at the tick
  r.launcher.Exit(rank0, 3);
  r.runner->Tick();
  REQUIRE(r.Exits().size() == 1);
  REQUIRE(r.Exits()[0].rank() == 0);
  REQUIRE(r.Exits()[0].exit_code() == 3);
  REQUIRE(r.Exits()[0].log_tail().find("loss went up") != std::string::npos);
  REQUIRE(r.Logs() == "epoch 1\nloss went up\n");  // shipped once
  REQUIRE(r.RankRecords() == std::make_pair(1, 2));  // its slot emptied, kept for the next rank
  REQUIRE(r.launcher.SignalsTo(rank0, SIGKILL) == 1);  // what its group left behind
  REQUIRE(r.runner->LiveRanks().size() == 1);
  REQUIRE_FALSE(r.runner->idle());
  // What the attempt's ranks left outside their groups goes with the last of them.
  REQUIRE(r.launcher.leftovers_killed.empty());
  r.launcher.Exit(r.Starts()[1].pid(), 0);
  r.runner->Tick();
  REQUIRE(r.launcher.leftovers_killed == std::vector<std::pair<std::string, int>>{{"j1", 1}});
  REQUIRE(r.runner->idle());
  REQUIRE(r.RankRecords() == std::make_pair(0, 2));
  // The next rank takes a free slot: no file is made or removed per rank.
  r.runner->Launch(Runner::Launch("j2", 0, {0}));
  r.runner->Tick();
  REQUIRE(r.RankRecords() == std::make_pair(1, 2));
}

TEST_CASE("a kill sends SIGTERM at once and SIGKILL when the grace period is over, on the clock",
          "[rank_runner]") {
  QuietLogs quiet;
  Runner r;
  r.runner->Launch(Runner::Launch("j1", 1, {0}));
  pid_t pid = r.Starts()[0].pid();
  KillRanks kill;
  kill.set_job_id("j1");
  kill.set_attempt(1);
  kill.set_grace_ms(3000);
  Micros at = r.clock.NowMicros() + 3'000'000;
  r.runner->Kill(kill);
  REQUIRE(r.launcher.SignalsTo(pid, SIGTERM) == 1);
  REQUIRE(r.runner->Tick() == at);  // the loop is asked to come back then
  r.clock.AdvanceMillis(2999);
  r.runner->Tick();
  REQUIRE(r.launcher.SignalsTo(pid, SIGKILL) == 0);
  r.clock.AdvanceMillis(1);
  REQUIRE(r.runner->Tick() == 0);
  REQUIRE(r.launcher.SignalsTo(pid, SIGKILL) == 1);
  r.clock.AdvanceMillis(60'000);
  r.runner->Tick();
  REQUIRE(r.launcher.SignalsTo(pid, SIGKILL) == 1);  // once
  REQUIRE(r.launcher.SignalsTo(pid, SIGTERM) == 1);
  r.launcher.Exit(pid, 0, SIGKILL);
  r.runner->Tick();
  REQUIRE(r.Exits().size() == 1);
  REQUIRE(r.Exits()[0].signal() == SIGKILL);
  REQUIRE(r.runner->idle());
}

TEST_CASE("once stopping, the runner refuses new and prepared launches and stops every rank", "[rank_runner]") {
  QuietLogs quiet;
  Runner r;
  r.runner->Launch(Runner::Launch("j1", 1, {0}));
  LaunchRanks fetching = Runner::Launch("j2", 1, {0, 1});
  fetching.set_package_id("pkg");
  r.runner->ExpectLaunch(fetching);
  pid_t pid = r.Starts()[0].pid();

  r.runner->StopAll(5000);
  REQUIRE(r.runner->stopping());
  REQUIRE(r.launcher.SignalsTo(pid, SIGTERM) == 1);
  // A launch the head sent before it heard of the drain: not started.
  r.runner->Launch(Runner::Launch("j3", 1, {0}));
  // The package arrives after the stop began: not started either.
  r.runner->LaunchPrepared(fetching);
  REQUIRE(r.launcher.spawned.size() == 1);
  REQUIRE(r.Exits().size() == 3);
  for (const RankExited& e : r.Exits()) {
    REQUIRE(e.job_id() != "j1");
    REQUIRE(e.signal() == SIGTERM);
  }
  r.clock.AdvanceMillis(5000);
  r.runner->Tick();
  REQUIRE(r.launcher.SignalsTo(pid, SIGKILL) == 1);
  REQUIRE_FALSE(r.runner->idle());
  r.launcher.Exit(pid, 0, SIGKILL);
  r.runner->Tick();
  REQUIRE(r.runner->idle());
  REQUIRE(r.Exits().size() == 4);
}

// The node agent schedules StartQueued on its loop: the launches that
// reach it meanwhile go to the launcher as one batch.
TEST_CASE("launches queued in one turn start as one batch, and a kill or a stop meanwhile starts none of theirs",
          "[rank_runner]") {
  QuietLogs quiet;
  Runner r;
  int scheduled = 0;
  r.runner->SetStartScheduler([&] { ++scheduled; });
  r.runner->Launch(Runner::Launch("j1", 0, {0, 1}));
  r.runner->Launch(Runner::Launch("j2", 0, {0}));
  r.runner->Launch(Runner::Launch("j3", 0, {0}));
  REQUIRE(scheduled == 1);  // once for the turn, not once a launch
  REQUIRE(r.launcher.spawned.empty());
  REQUIRE(r.runner->Holds("j2", 0));
  REQUIRE_FALSE(r.runner->idle());

  KillRanks kill;
  kill.set_job_id("j2");
  kill.set_attempt(0);
  r.runner->Kill(kill);
  REQUIRE_FALSE(r.runner->Holds("j2", 0));
  REQUIRE(r.Exits().size() == 1);
  REQUIRE(r.Exits()[0].job_id() == "j2");
  REQUIRE(r.Exits()[0].signal() == SIGTERM);

  r.runner->StartQueued();
  REQUIRE(r.launcher.batches == std::vector<size_t>{3});  // j1's two ranks and j3's, in one SpawnAll
  REQUIRE(r.Starts().size() == 3);
  REQUIRE(r.Starts()[0].job_id() == "j1");
  REQUIRE(r.Starts()[1].rank() == 1);
  REQUIRE(r.Starts()[2].job_id() == "j3");
  r.runner->StartQueued();  // nothing queued: no SpawnAll
  REQUIRE(r.launcher.batches.size() == 1);

  r.runner->Launch(Runner::Launch("j4", 0, {0}));
  REQUIRE(scheduled == 2);
  r.runner->StopAll(1000);
  REQUIRE(r.Exits().size() == 2);
  REQUIRE(r.Exits()[1].job_id() == "j4");
  r.runner->StartQueued();
  REQUIRE(r.launcher.batches.size() == 1);
  REQUIRE(r.Starts().size() == 3);
}

TEST_CASE("a rank that cannot start is reported failed with why, and a stranger's exit is ignored",
          "[rank_runner]") {
  QuietLogs quiet;
  Runner r;
  r.launcher.fail_with = "cannot execute the entrypoint: No such file or directory";
  r.runner->Launch(Runner::Launch("j1", 1, {0}));
  REQUIRE(r.Exits().size() == 1);
  REQUIRE(r.Exits()[0].exit_code() == 127);
  REQUIRE(r.Exits()[0].error().find("cannot execute") != std::string::npos);
  REQUIRE(r.runner->idle());
  // An orphan handed to the agent as subreaper: reaped, not reported.
  r.launcher.Exit(4242, 0);
  r.runner->Tick();
  REQUIRE(r.Exits().size() == 1);
}

TEST_CASE("a report is tied to the rank the caller descends from, never by its process group", "[rank_runner][report_forging]") {
  QuietLogs quiet;
  Runner r;
  r.runner->Launch(Runner::Launch("j1", 2, {3}));
  pid_t leader = r.Starts()[0].pid();
  r.launcher.groups[leader] = leader;
  r.launcher.groups[5555] = leader;  // a process the rank started
  r.launcher.parents[5555] = leader;
  r.launcher.groups[6666] = 6666;    // someone else
  MetricsReport report;
  REQUIRE(r.runner->TakeReport(&report, 5555).ok());
  REQUIRE(report.job_id() == "j1");
  REQUIRE(report.attempt() == 2);
  REQUIRE(report.rank() == 3);
  REQUIRE(r.sent.back().metrics().rank() == 3);
  Status stranger = r.runner->TakeReport(&report, 6666);
  REQUIRE(stranger.code() == Status::Code::kFailedPrecondition);
  REQUIRE(stranger.message().rfind("process 6666 is not a rank this node agent runs: ", 0) == 0);
  REQUIRE_FALSE(r.runner->TakeReport(&report, 1).ok());
  // A trainer under `timeout` (or `setsid`) leads a group of its own; it
  // still descends from the rank.
  r.launcher.groups[7777] = 7777;
  r.launcher.parents[7777] = 5555;
  REQUIRE(r.runner->TakeReport(&report, 7777).ok());
  REQUIRE(r.sent.back().metrics().rank() == 3);
  r.launcher.parents[6666] = 1;  // a stranger whose ancestry never meets a rank
  REQUIRE_FALSE(r.runner->TakeReport(&report, 6666).ok());
  // A stranger that moved itself into the rank's process group (setpgid:
  // any process of the launcher's session can) is still a stranger.
  r.launcher.groups[8888] = leader;
  r.launcher.parents[8888] = 1;
  Status joined = r.runner->TakeReport(&report, 8888);
  REQUIRE(joined.code() == Status::Code::kFailedPrecondition);
  REQUIRE(joined.message().find("a process group or session does not count") != std::string::npos);
}

TEST_CASE("ranks' output comes through their pipes into shared packs: no file per rank, nothing lost at exit",
          "[rank_runner][logs]") {
  QuietLogs quiet;
  Runner r;
  r.runner->Launch(Runner::Launch("j1", 1, {0, 1, 2}));
  REQUIRE(r.launcher.spawned.size() == 3);
  for (const auto& [pid, request] : r.launcher.spawned) REQUIRE(request.output_fd >= 0);
  r.launcher.Print(r.Starts()[0].pid(), "rank 0 says\n");
  // More than a pipe holds (1 MiB) and than one tick takes from it (4 MiB):
  // the writer waits only until the next ticks, and nothing is dropped.
  const std::string flood = std::string(9 << 20, 'x') + "\nlast words\n";
  std::thread writer([&] { r.launcher.Print(r.Starts()[1].pid(), flood); });
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (r.Logs().size() < flood.size() + 12 && std::chrono::steady_clock::now() < give_up) r.runner->Tick();
  writer.join();
  for (const auto& [pid, request] : r.launcher.spawned) r.launcher.Exit(pid, 0);
  r.runner->Tick();
  REQUIRE(r.Exits().size() == 3);
  REQUIRE(r.Logs().size() == flood.size() + 12);
  REQUIRE_THAT(r.Exits()[1].log_tail(), Catch::EndsWith("last words"));
  REQUIRE(r.Exits()[0].log_tail() == "rank 0 says");
  REQUIRE(r.Exits()[2].log_tail().empty());  // printed nothing
  // The small log is packed, the silent one nothing, and the large one's
  // file of its own is gone once the head has it all (kept, such files
  // would fill a node's disk).
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(r.dir.Path("logs"))) {
    names.push_back(entry.path().filename());
  }
  std::sort(names.begin(), names.end());
  REQUIRE(names == std::vector<std::string>{"empty-config.json", "packs"});
}

TEST_CASE("an agent out of descriptors starts none of a launch's ranks and reports each with why",
          "[rank_runner]") {
  QuietLogs quiet;
  Runner r;
  // Room for no pipe: a tight limit, and every number under it taken.
  rlimit saved{};
  REQUIRE(getrlimit(RLIMIT_NOFILE, &saved) == 0);
  int highest = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    highest = std::max(highest, std::stoi(entry.path().filename().string()));
  }
  rlimit tight = saved;
  tight.rlim_cur = static_cast<rlim_t>(highest + 8);
  REQUIRE(setrlimit(RLIMIT_NOFILE, &tight) == 0);
  std::vector<int> fillers;
  for (int fd; (fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0;) fillers.push_back(fd);
  r.runner->Launch(Runner::Launch("j1", 0, {0, 1}));
  for (int fd : fillers) close(fd);
  REQUIRE(setrlimit(RLIMIT_NOFILE, &saved) == 0);
  REQUIRE(r.launcher.spawned.empty());
  REQUIRE(r.Exits().size() == 2);
  for (const auto& exit : r.Exits()) {
    REQUIRE(exit.exit_code() == 127);
    REQUIRE_THAT(exit.error(), Catch::Contains("cannot make a pipe for a rank's output"));
  }
  REQUIRE(r.runner->idle());
}

TEST_CASE("a launch that asks for it gets one free MASTER_PORT for all its ranks, told in their starts",
          "[rank_runner]") {
  QuietLogs quiet;
  Runner r;
  LaunchRanks launch = Runner::Launch("j1", 0, {0, 1, 2});
  (*launch.mutable_env())["MASTER_PORT"] = "0";  // what the head sends when it leaves the port to the node
  launch.set_pick_master_port(true);
  r.runner->Launch(launch);
  REQUIRE(r.launcher.spawned.size() == 3);
  const std::string port = std::string(EnvironmentValue(r.launcher.spawned[0].second.env, "MASTER_PORT").value_or("(unset)"));
  REQUIRE(std::stoi(port) > 0);
  for (const auto& [pid, request] : r.launcher.spawned) REQUIRE(EnvironmentValue(request.env, "MASTER_PORT").value_or("(unset)") == port);
  for (const auto& started : r.Starts()) REQUIRE(started.master_port() == std::stoi(port));

  // Without the ask, the head's port stands and none is told.
  Runner other;
  LaunchRanks given = Runner::Launch("j2", 0, {0});
  (*given.mutable_env())["MASTER_PORT"] = "29500";
  other.runner->Launch(given);
  REQUIRE(EnvironmentValue(other.launcher.spawned[0].second.env, "MASTER_PORT").value_or("(unset)") == "29500");
  REQUIRE(other.Starts()[0].master_port() == 0);

  // A picked port is known nowhere else: a start that tells it waits while
  // the head is away (one that does not is covered by the live ranks).
  Runner away;
  away.connected = false;
  away.runner->Launch(launch);
  away.runner->Launch(given);
  REQUIRE(away.runner->unreported() == 3);
  away.connected = true;
  away.runner->FlushUnreported();
  REQUIRE(away.Starts().size() == 3);
  for (const auto& started : away.Starts()) REQUIRE(started.master_port() > 0);
}

TEST_CASE("a rank that ends before the runner's next tick is never recorded and one still running is", "[rank_runner]") {
  QuietLogs quiet;
  Runner r;
  r.runner->Launch(Runner::Launch("quick", 0, {0}));
  r.runner->Launch(Runner::Launch("slow", 0, {0}));
  r.launcher.Exit(r.Starts()[0].pid(), 0);
  r.runner->Tick();
  REQUIRE(r.RankRecords() == std::make_pair(1, 1));  // only the running one, in the one slot made
  REQUIRE(r.Exits().size() == 1);
  r.launcher.Exit(r.Starts()[1].pid(), 0);
  r.runner->Tick();
  REQUIRE(r.RankRecords() == std::make_pair(0, 1));  // blanked, the slot kept for the next rank
}

TEST_CASE("two runners sharing a session's ranks folder keep their records apart, and remove their free slots",
          "[rank_runner]") {
  QuietLogs quiet;
  Runner a;
  RankRunner::Options options;
  options.logs_dir = a.dir.Path("logs-b");
  options.ranks_dir = a.dir.Path("ranks");  // the same folder
  options.socket_path = a.dir.Path("b.sock");
  options.node_ip = "127.0.0.1";
  FakeLauncher launcher_b;
  auto b = std::make_unique<RankRunner>(options, &a.clock, &launcher_b, [](const AgentMessage&) { return true; });
  a.runner->Launch(Runner::Launch("j1", 0, {0}));
  b->Launch(Runner::Launch("j1", 0, {1}));
  REQUIRE(a.RankRecords() == std::make_pair(0, 0));  // recorded by the first tick that finds them running
  a.runner->Tick();
  b->Tick();
  REQUIRE(a.RankRecords() == std::make_pair(2, 2));  // one file each, neither overwritten
  a.launcher.Exit(a.Starts()[0].pid(), 0);
  a.runner->Tick();
  REQUIRE(a.RankRecords() == std::make_pair(1, 2));
  a.runner.reset();  // its free slot goes
  REQUIRE(a.RankRecords() == std::make_pair(1, 1));
  b.reset();  // a rank still running keeps its record for `clusterd stop`
  REQUIRE(a.RankRecords() == std::make_pair(1, 1));
}

namespace {

KillRanks KillOf(const std::string& job, int attempt, int grace_ms) {
  KillRanks kill;
  kill.set_job_id(job);
  kill.set_attempt(attempt);
  kill.set_grace_ms(grace_ms);
  return kill;
}

}  // namespace

// An attempt placed on a node where the one before is still being stopped
// must not run beside it, both in the job's folder.
TEST_CASE("an attempt starts once the earlier attempt's ranks here are gone and their grace is over", "[rank_runner]") {
  QuietLogs quiet;
  Runner r;
  r.runner->Launch(Runner::Launch("j1", 0, {0}));
  const pid_t old = r.Starts()[0].pid();
  r.runner->Kill(KillOf("j1", 0, 5000));
  r.runner->LaunchPrepared(Runner::Launch("j1", 1, {0}));
  r.runner->LaunchPrepared(Runner::Launch("j2", 0, {0}));  // another job is not held back
  REQUIRE(r.Starts().size() == 2);
  REQUIRE(r.Starts()[1].job_id() == "j2");
  REQUIRE_FALSE(r.runner->idle());
  // The old rank's shell dies of the SIGTERM; what it started has the grace.
  r.launcher.Exit(old, 0, SIGTERM);
  r.runner->Tick();
  r.clock.AdvanceMillis(4000);
  r.runner->Tick();
  REQUIRE(r.Starts().size() == 2);
  r.clock.AdvanceMillis(1000);
  r.runner->Tick();
  REQUIRE(r.Starts().size() == 3);
  REQUIRE(r.Starts()[2].job_id() == "j1");
  REQUIRE(r.Starts()[2].attempt() == 1);

  // One that waits and is stopped meanwhile never starts, and says so.
  r.runner->Kill(KillOf("j1", 1, 5000));
  r.runner->LaunchPrepared(Runner::Launch("j1", 2, {0}));
  r.runner->Kill(KillOf("j1", 2, 5000));
  r.launcher.Exit(r.Starts()[2].pid(), 0, SIGTERM);
  r.clock.AdvanceMillis(5000);
  r.runner->Tick();
  r.runner->Tick();
  REQUIRE(r.Starts().size() == 3);
  const auto exits = r.Exits();
  REQUIRE(exits.back().job_id() == "j1");
  REQUIRE(exits.back().attempt() == 2);
  REQUIRE(exits.back().signal() == SIGTERM);
}

// `clusterd stop` must not wait out the whole grace for a shell whose
// program died with it.
TEST_CASE("a stopped rank's grace is owed to what it left only while something is left", "[rank_runner]") {
  QuietLogs quiet;
  const bool left = GENERATE(true, false);
  Runner r;
  r.launcher.may_have_leftovers = left;
  r.runner->Launch(Runner::Launch("j1", 0, {0}));
  r.runner->Kill(KillOf("j1", 0, 5000));
  r.launcher.Exit(r.Starts()[0].pid(), 0, SIGTERM);
  r.runner->Tick();
  REQUIRE(r.runner->idle() == !left);
  r.clock.AdvanceMillis(5000);
  r.runner->Tick();
  REQUIRE(r.runner->idle());
}

TEST_CASE("a rank finds the node's clusterd Python package first on its PYTHONPATH, before the job's own",
          "[rank_runner]") {
  QuietLogs quiet;
  Runner r("/opt/clusterd/python");
  LaunchRanks launch = Runner::Launch("j1", 0, {0, 1});
  (*launch.mutable_env())["PYTHONPATH"] = "/job/lib:/job/more";
  r.runner->Launch(launch);
  REQUIRE(r.launcher.spawned.size() == 2);
  for (const auto& spawned : r.launcher.spawned) {
    REQUIRE(EnvironmentValue(spawned.second.env, "PYTHONPATH").value_or("(unset)") ==
            "/opt/clusterd/python:/job/lib:/job/more");
  }
  // A job that sets none: the package, then whatever the node's own environment had.
  r.runner->Launch(Runner::Launch("j2", 0, {0}));
  const char* node_has = std::getenv("PYTHONPATH");
  REQUIRE(EnvironmentValue(r.launcher.spawned.back().second.env, "PYTHONPATH").value_or("(unset)") ==
          RankPythonPath("/opt/clusterd/python", node_has ? node_has : ""));
  REQUIRE(RankPythonPath("/p", "") == "/p");
  REQUIRE(RankPythonPath("", "/job") == "/job");
}

TEST_CASE("a node built from a checkout finds the package in the checkout's python folder", "[rank_runner]") {
  const std::string found = ClusterdPythonPath();
  REQUIRE_FALSE(found.empty());
  std::ifstream init(found + "/clusterd/__init__.py");
  REQUIRE(init.good());
}
