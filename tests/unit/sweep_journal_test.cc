// The sweeps' journal alone, over a store in memory: whole records and
// trial records replay into each sweep's latest record, a change to a sweep
// it does not hold is skipped, and ids are never handed out twice.
#include <catch2/catch.hpp>

#include <vector>

#include "daemon/head/job_store.h"
#include "daemon/head/sweep_journal.h"

using namespace clusterd;

namespace {

SweepInfo Sweep(const std::string& id, int trials) {
  SweepInfo info;
  info.set_sweep_id(id);
  info.set_state(SWEEP_RUNNING);
  for (int i = 0; i < trials; ++i) {
    TrialInfo* trial = info.add_trials();
    trial->set_index(i);
    trial->set_state(TRIAL_WAITING);
  }
  return info;
}

}  // namespace

TEST_CASE("the sweeps' journal replays whole records and trial records into each sweep's latest",
          "[sweep][sweep_journal]") {
  FakeClock clock;
  MemoryJobStore store;
  SweepInfo first = Sweep("sweep-0001-c", 2), second = Sweep("sweep-0003-c", 1);
  int next_number = 4;
  SweepJournal journal(&clock, &store, [&] { return SweepJournal::Records{next_number, {&first, &second}}; });
  REQUIRE(journal.RecordSubmit(first).ok());
  REQUIRE(journal.RecordSubmit(second).ok());
  first.mutable_trials(1)->set_state(TRIAL_ACTIVE);
  first.mutable_trials(1)->set_job_id("job-7");
  first.set_best_trial(1);
  journal.RecordTrials(first, {1});
  second.set_state(SWEEP_STOPPED);
  journal.RecordSweep(second);
  SweepInfo unknown = Sweep("sweep-0009-c", 1);
  journal.RecordTrials(unknown, {0});  // never submitted: nothing to apply it to

  auto loaded = SweepJournal(&clock, &store, nullptr).Load();
  REQUIRE(loaded.ok());
  REQUIRE(loaded->sweeps.size() == 2);
  CHECK(loaded->sweeps[0].sweep_id() == "sweep-0001-c");
  CHECK(loaded->sweeps[0].trials(1).job_id() == "job-7");
  CHECK(loaded->sweeps[0].trials(0).state() == TRIAL_WAITING);
  CHECK(loaded->sweeps[0].best_trial() == 1);
  CHECK(loaded->sweeps[1].state() == SWEEP_STOPPED);
  CHECK(loaded->next_sweep_number == 4);  // after sweep-0003

  // A rewrite without the newest sweep keeps its number from coming back.
  next_number = 5;
  REQUIRE(journal.Rewrite("sweep-0003-c").ok());
  loaded = SweepJournal(&clock, &store, nullptr).Load();
  REQUIRE(loaded.ok());
  REQUIRE(loaded->sweeps.size() == 1);
  CHECK(loaded->sweeps[0].trials(1).state() == TRIAL_ACTIVE);
  CHECK(loaded->next_sweep_number == 5);
}
