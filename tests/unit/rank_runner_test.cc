// The rank runner driven like the head's core: a fake clock, a fake
// launcher, a recording send; no processes and no sleeps. Launch, exit,
// kill with its grace period, stop (drain) and the head going away and
// coming back.
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>
#include <fstream>

#include "common/file_util.h"
#include "daemon/agent/rank_environment.h"
#include "daemon/agent/rank_runner.h"
#include "fake_launcher.h"
#include "head_harness.h"
#include "temp_tree.h"

using namespace clusterd;
using namespace clusterd::testing;

namespace {

struct Runner {
  TempTree dir;
  FakeClock clock;
  FakeLauncher launcher;
  bool connected = true;
  std::vector<AgentMessage> sent;
  std::unique_ptr<RankRunner> runner;

  Runner() {
    RankRunner::Options options;
    options.logs_dir = dir.Path("logs");
    options.ranks_dir = dir.Path("ranks");
    options.socket_path = dir.Path("agent.sock");
    options.node_ip = "127.0.0.1";
    runner = std::make_unique<RankRunner>(options, &clock, &launcher, [this](const AgentMessage& m) {
      if (connected) sent.push_back(m);
      return connected;
    });
  }

  static LaunchRanks Launch(const std::string& job, int attempt, std::vector<int> ranks) {
    LaunchRanks launch;
    launch.set_job_id(job);
    launch.set_attempt(attempt);
    launch.add_argv("train");
    for (int r : ranks) launch.add_ranks()->set_rank(r);
    return launch;
  }

  std::vector<RankExited> Exits() const {
    std::vector<RankExited> out;
    for (const auto& m : sent) {
      if (m.has_rank_exited()) out.push_back(m.rank_exited());
    }
    return out;
  }
  std::vector<RankStarted> Starts() const {
    std::vector<RankStarted> out;
    for (const auto& m : sent) {
      if (m.has_rank_started()) out.push_back(m.rank_started());
    }
    return out;
  }
  std::string Logs() const {
    std::string out;
    for (const auto& m : sent) {
      if (m.has_log()) out += m.log().data();
    }
    return out;
  }
  // Files in the ranks folder: {that record a rank, in all} (a free slot's is empty).
  std::pair<int, int> RankRecords() const {
    int recorded = 0, files = 0;
    for (const auto& entry : std::filesystem::directory_iterator(dir.Path("ranks"))) {
      ++files;
      // What `clusterd stop` reads: a free slot is blank (the fake pids
      // name no process, so their records hold zeros).
      auto text = ReadFileTrimmed(entry.path());
      recorded += text.ok() && !text->empty() ? 1 : 0;
    }
    return {recorded, files};
  }
};

}  // namespace

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

TEST_CASE("exits and log bytes wait while the head is away and go once it is back", "[rank_runner]") {
  QuietLogs quiet;
  Runner r;
  r.runner->Launch(Runner::Launch("j1", 1, {0}));
  pid_t pid = r.Starts()[0].pid();
  r.connected = false;
  r.launcher.Print(pid, "written while the head was away\n");
  r.launcher.Exit(pid, 1);
  r.runner->Tick();
  REQUIRE(r.sent.size() == 1);  // only the start
  REQUIRE(r.runner->unreported() == 1);
  // Registered again: the registration lists no live rank, and the exit goes.
  REQUIRE(r.runner->LiveRanks().empty());
  r.connected = true;
  r.runner->FlushUnreported();
  REQUIRE(r.Exits().size() == 1);
  REQUIRE(r.Exits()[0].exit_code() == 1);
  REQUIRE(r.runner->unreported() == 0);
  // What it printed meanwhile went first: a job's last exit ends it, and
  // its log must be whole by then.
  REQUIRE(r.sent.size() == 3);
  REQUIRE(r.sent[1].log().data() == "written while the head was away\n");
  REQUIRE(r.sent[2].has_rank_exited());
  // A checkpoint stored while the head was away is told once it is back,
  // so a retry resumes from it.
  r.connected = false;
  AgentMessage stored;
  stored.mutable_checkpoint_stored()->set_job_id("j1");
  stored.mutable_checkpoint_stored()->set_name("checkpoint_000003");
  r.runner->ReportKept(stored);
  REQUIRE(r.runner->unreported() == 1);
  r.connected = true;
  r.runner->FlushUnreported();
  REQUIRE(r.sent.back().checkpoint_stored().name() == "checkpoint_000003");
}

// Found by exploratory testing: a rank's last epoch reported while the head
// restarted was refused ("the head is not reachable right now"), and its
// metrics, its checkpoint and a trial's iteration count were lost.
TEST_CASE("reports made while the head is away are kept numbered and in order and go before the rank's exit",
          "[rank_runner]") {
  QuietLogs quiet;
  Runner r;
  r.runner->Launch(Runner::Launch("j1", 2, {0}));
  const pid_t pid = r.Starts()[0].pid();
  r.launcher.groups[pid] = pid;
  auto report = [&](double loss) {
    MetricsReport m;
    (*m.mutable_values())["loss"] = loss;
    return r.runner->TakeReport(&m, pid);
  };
  REQUIRE(report(0.9).ok());
  r.connected = false;
  REQUIRE(report(0.5).ok());
  REQUIRE(report(0.3).ok());
  r.launcher.Exit(pid, 0);
  r.runner->Tick();
  REQUIRE(r.runner->unreported() == 3);  // two reports, then the exit
  r.connected = true;
  r.runner->FlushUnreported();
  std::vector<std::pair<int64_t, double>> reports;
  for (const AgentMessage& m : r.sent) {
    if (m.has_metrics()) reports.emplace_back(m.metrics().report_seq(), m.metrics().values().at("loss"));
  }
  REQUIRE(reports == std::vector<std::pair<int64_t, double>>{{1, 0.9}, {2, 0.5}, {3, 0.3}});
  REQUIRE(r.sent.back().has_rank_exited());
  REQUIRE(r.sent[r.sent.size() - 2].metrics().report_seq() == 3);
  REQUIRE(r.sent[r.sent.size() - 2].metrics().job_id() == "j1");
  REQUIRE(r.sent[r.sent.size() - 2].metrics().attempt() == 2);
}

// Found by exploratory testing: with the head away, a rank's exit waited
// behind its unshipped log without being offered to the outputs upload, so
// rank 0's outputs were sent only after the head was back, often past a
// restarted head's adoption deadline: the job was failed and run again.
TEST_CASE("an exit is offered for its outputs as soon as it is reaped and the exit reported later waits for its log",
          "[rank_runner]") {
  QuietLogs quiet;
  Runner r;
  std::vector<AgentMessage> taken;
  r.runner->SetExitTaker([&](const AgentMessage& m) {
    taken.push_back(m);
    return m.rank_exited().rank() == 0 && m.rank_exited().exit_code() == 0;
  });
  r.runner->Launch(Runner::Launch("j1", 0, {0, 1}));
  const pid_t zero = r.Starts()[0].pid(), one = r.Starts()[1].pid();
  r.connected = false;
  r.launcher.Print(zero, "rank 0 saved its model\n");
  r.launcher.Exit(zero, 0);
  r.launcher.Exit(one, 0);
  r.runner->Tick();
  REQUIRE(taken.size() == 2);               // both offered at once, head or no head
  REQUIRE(r.runner->unreported() == 1);     // rank 1's exit; rank 0's was taken
  // Its outputs stored while the head is still away: kept behind its log.
  AgentMessage amended = taken[0];
  amended.mutable_rank_exited()->set_outputs_manifest("m");
  r.runner->ReportKept(amended);
  REQUIRE(r.runner->unreported() == 2);
  r.connected = true;
  r.runner->FlushUnreported();
  REQUIRE(r.runner->unreported() == 0);
  std::vector<std::string> order;
  for (const AgentMessage& m : r.sent) {
    if (m.has_log()) order.push_back("log " + std::to_string(m.log().rank()));
    if (m.has_rank_exited()) order.push_back("exit " + std::to_string(m.rank_exited().rank()));
  }
  REQUIRE(order == std::vector<std::string>{"log 0", "exit 1", "exit 0"});
  REQUIRE(r.sent.back().rank_exited().outputs_manifest() == "m");
}

TEST_CASE("a head away for too long costs the newest reports and tells the rank so", "[rank_runner]") {
  QuietLogs quiet;
  Runner r;
  r.runner->Launch(Runner::Launch("j1", 0, {0}));
  const pid_t pid = r.Starts()[0].pid();
  r.launcher.groups[pid] = pid;
  r.connected = false;
  MetricsReport m;
  for (size_t i = 0; i < RankRunner::kMaxKeptReports; ++i) REQUIRE(r.runner->TakeReport(&m, pid).ok());
  Status refused = r.runner->TakeReport(&m, pid);
  REQUIRE(refused.code() == Status::Code::kUnavailable);
  REQUIRE(refused.message() == "the head has been away for 4096 reports; this one is not kept");
  r.connected = true;
  r.runner->FlushUnreported();
  REQUIRE(r.sent.back().metrics().report_seq() == 4096);
  REQUIRE(r.runner->TakeReport(&m, pid).ok());  // back: taken again, numbered on
  REQUIRE(r.sent.back().metrics().report_seq() == 4097);
}

TEST_CASE("an exit refused by a full link waits behind its rank's log and goes at a later tick, not at a registration",
          "[rank_runner]") {
  QuietLogs quiet;
  Runner r;
  r.runner->Launch(Runner::Launch("j1", 1, {0}));
  const pid_t pid = r.Starts()[0].pid();
  r.launcher.Print(pid, "last words\n");
  r.launcher.Exit(pid, 0);
  r.connected = false;  // the link's queue is full for one tick
  r.runner->Tick();
  REQUIRE(r.runner->unreported() == 1);
  REQUIRE(r.Exits().empty());
  r.connected = true;
  r.runner->Tick();
  REQUIRE(r.runner->unreported() == 0);
  REQUIRE(r.sent.size() == 3);
  REQUIRE(r.sent[1].log().data() == "last words\n");
  REQUIRE(r.sent[2].rank_exited().exit_code() == 0);
  r.runner->Tick();
  REQUIRE(r.sent.size() == 3);  // once each
}

TEST_CASE("log bytes refused by a full or broken link are sent again, none lost or doubled", "[rank_runner]") {
  QuietLogs quiet;
  Runner r;
  r.runner->Launch(Runner::Launch("j1", 1, {0}));
  const pid_t pid = r.Starts()[0].pid();
  r.launcher.Print(pid, "one\n");
  r.connected = false;
  r.runner->Tick();
  r.connected = true;
  r.runner->Tick();
  r.launcher.Print(pid, "two\n");
  r.runner->Tick();
  REQUIRE(r.Logs() == "one\ntwo\n");
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

TEST_CASE("a report is tied to the rank whose process group the caller is in", "[rank_runner]") {
  QuietLogs quiet;
  Runner r;
  r.runner->Launch(Runner::Launch("j1", 2, {3}));
  pid_t leader = r.Starts()[0].pid();
  r.launcher.groups[leader] = leader;
  r.launcher.groups[5555] = leader;  // a process the rank started
  r.launcher.groups[6666] = 6666;    // someone else
  MetricsReport report;
  REQUIRE(r.runner->TakeReport(&report, 5555).ok());
  REQUIRE(report.job_id() == "j1");
  REQUIRE(report.attempt() == 2);
  REQUIRE(report.rank() == 3);
  REQUIRE(r.sent.back().metrics().rank() == 3);
  Status stranger = r.runner->TakeReport(&report, 6666);
  REQUIRE(stranger.code() == Status::Code::kFailedPrecondition);
  REQUIRE(stranger.message() == "process 6666 is not a rank this node agent runs");
  REQUIRE_FALSE(r.runner->TakeReport(&report, 1).ok());
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
  // The small log is packed, the large one has a file of its own, the silent one nothing.
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(r.dir.Path("logs"))) {
    names.push_back(entry.path().filename());
  }
  std::sort(names.begin(), names.end());
  REQUIRE(names == std::vector<std::string>{"empty-config.json", "j1.attempt-1.rank-1.log", "packs"});
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
