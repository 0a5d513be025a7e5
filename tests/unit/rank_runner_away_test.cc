// The rank runner while its head is away or its link full: exits, log
// bytes and reports kept, in order, and sent once the head is back; exits
// offered for rank 0's outputs as soon as they are reaped.
#include <catch2/catch.hpp>
#include <string>
#include <utility>
#include <vector>

#include "rank_runner_harness.h"

using namespace clusterd;
using namespace clusterd::testing;

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

// A rank's last epoch reported while the head restarts must not be refused
// ("the head is not reachable right now"): its metrics, its checkpoint and
// a trial's iteration count would be lost.
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

// With the head away, an exit waiting behind its unshipped log is still
// offered to the outputs upload at once: rank 0's outputs sent only once
// the head is back could miss a restarted head's adoption deadline, and the
// job would be failed and run again.
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
