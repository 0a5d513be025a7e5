// The rank runner's part in hang detection, driven like the head's core
// (rank_runner_harness.h: no processes, no sleeps): the ranks of a watched
// attempt are told idle once quiet for the watch's idle time, a line
// printed makes one active again, an unwatched attempt's ranks cost
// nothing, a kill ends the watch, and a diagnosis answers with each rank's
// last lines once its wait is over on the clock.
#include <catch2/catch.hpp>

#include "rank_runner_harness.h"

using namespace clusterd;
using namespace clusterd::testing;

namespace {

// Pids no process can have (above the kernel's largest pid_max), so that
// the CPU reading of /proc finds nothing of the fake ranks.
constexpr pid_t kNoSuchPid = 4194304 + 1000;

std::vector<RankActivity> Activity(const Runner& r) {
  std::vector<RankActivity> out;
  for (const auto& m : r.sent) {
    if (m.has_rank_activity()) out.push_back(m.rank_activity());
  }
  return out;
}

WatchRanks Watch(const std::string& job, int attempt, int64_t idle_after_ms) {
  WatchRanks watch;
  watch.set_job_id(job);
  watch.set_attempt(attempt);
  watch.set_idle_after_ms(idle_after_ms);
  return watch;
}

}  // namespace

TEST_CASE("a watched rank is told idle when quiet, active when it prints, and not at all once killed",
          "[rank_runner][hang]") {
  QuietLogs quiet;
  Runner r;
  r.launcher.next_pid = kNoSuchPid;
  r.runner->Launch(Runner::Launch("j1", 0, {0, 1}));
  r.runner->Launch(Runner::Launch("other", 0, {0}));  // no hang timeout: never watched
  r.runner->Watch(Watch("j1", 0, 1000));  // after the ranks started: they are watched too
  const pid_t rank0 = r.Starts()[0].pid();

  r.clock.AdvanceMillis(600);
  r.launcher.Print(rank0, "step 1\n");  // rank 0 is active at 600 ms
  r.runner->Tick();
  r.clock.AdvanceMillis(500);
  r.runner->Tick();
  // Rank 1 has been quiet for 1.1 s: told idle; rank 0 for 0.5 s only.
  REQUIRE(Activity(r).size() == 1);
  CHECK(Activity(r)[0].rank() == 1);
  CHECK(Activity(r)[0].idle());
  CHECK(Activity(r)[0].idle_for_ms() == 1100);
  r.clock.AdvanceMillis(500);
  r.runner->Tick();
  REQUIRE(Activity(r).size() == 2);
  CHECK(Activity(r)[1].rank() == 0);
  CHECK(Activity(r)[1].idle_for_ms() == 1000);

  // Printing makes rank 0 active again, told at the tick that reads it.
  r.launcher.Print(rank0, "step 2\n");
  r.runner->Tick();
  REQUIRE(Activity(r).size() == 3);
  CHECK(Activity(r)[2].rank() == 0);
  CHECK_FALSE(Activity(r)[2].idle());
  for (const RankActivity& a : Activity(r)) CHECK(a.job_id() == "j1");

  // Killed: nothing more about it, however long it stays quiet.
  KillRanks kill;
  kill.set_job_id("j1");
  kill.set_attempt(0);
  kill.set_grace_ms(60000);
  r.runner->Kill(kill);
  r.clock.AdvanceMillis(5000);
  r.runner->Tick();
  CHECK(Activity(r).size() == 3);
}

TEST_CASE("a diagnosis answers with each rank's last lines once its wait is over", "[rank_runner][hang]") {
  QuietLogs quiet;
  Runner r;
  r.launcher.next_pid = kNoSuchPid;
  r.runner->Launch(Runner::Launch("j1", 0, {0, 1}));
  r.runner->Watch(Watch("j1", 0, 1000));
  r.launcher.Print(r.Starts()[0].pid(), "epoch 3\nwaiting for rank 1\n");
  r.runner->Tick();
  DiagnoseRanks diagnose;
  diagnose.set_job_id("j1");
  diagnose.set_attempt(0);
  diagnose.set_wait_ms(500);
  diagnose.set_tail_lines(1);
  r.runner->Diagnose(diagnose);
  auto answers = [&r] {
    std::vector<RanksDiagnosed> out;
    for (const auto& m : r.sent) {
      if (m.has_ranks_diagnosed()) out.push_back(m.ranks_diagnosed());
    }
    return out;
  };
  // Its stack, printed during the wait, is in the last lines.
  r.launcher.Print(r.Starts()[1].pid(), "Thread 0x1 (most recent call first):\n");
  r.clock.AdvanceMillis(499);
  r.runner->Tick();
  REQUIRE(answers().empty());
  r.clock.AdvanceMillis(1);
  r.runner->Tick();
  REQUIRE(answers().size() == 1);
  const RanksDiagnosed answer = answers()[0];
  CHECK(answer.job_id() == "j1");
  REQUIRE(answer.ranks_size() == 2);
  CHECK(answer.ranks(0).rank() == 0);
  CHECK(answer.ranks(0).log_tail() == "waiting for rank 1");
  CHECK(answer.ranks(0).wait_channel() == "unreadable");  // no such process here
  CHECK(answer.ranks(0).python_processes() == 0);
  CHECK(answer.ranks(1).log_tail() == "Thread 0x1 (most recent call first):");
  // Diagnosed: the attempt is no longer watched.
  r.clock.AdvanceMillis(5000);
  r.runner->Tick();
  CHECK(Activity(r).empty());
}
