// SweepRestore alone over a head's jobs: every recorded report goes to the
// sweep's decisions again in the order the head took them, acted on only
// for trials the journal left ACTIVE; a trial whose job the record lacks
// gets it back; journaled ends stand, and a DONE trial whose job runs on
// gets its moment to end again.
#include <catch2/catch.hpp>

#include <tuple>
#include <vector>

#include "daemon/head/sweep_restore.h"
#include "sweep_harness.h"

using namespace clusterd;
using namespace clusterd::testing;

TEST_CASE("a restore replays reports in the head's order, acts only for active trials and keeps journaled ends",
          "[sweep][sweep_restore]") {
  QuietLogs quiet;
  SweepHarness h;
  SweepInfo record = h.Sweep(h.SubmitOnNodeA(2, PlainSweepSubmit(3, 2)));
  const std::string t0 = record.trials(0).job_id(), t1 = record.trials(1).job_id();
  h.StartOnNodeA({t0, t1});
  const int64_t now = h.clock.UnixMillis();
  h.Report("a", t1, 0.61, 0, "", now);
  h.Report("a", t0, 0.50, 0, "", now - 60'000);  // its machine's clock is behind
  h.Report("a", t0, 0.52, 0, "", now);

  // The journal's record: trial 0 ended DONE while its job runs on; trial
  // 1's job was submitted just before the head died, so the record lacks it.
  record.mutable_trials(0)->set_state(TRIAL_DONE);
  record.mutable_trials(0)->set_reason("reached max_t (4 training_iteration)");
  record.mutable_trials(0)->set_iterations(7);
  record.mutable_trials(1)->clear_job_id();
  record.mutable_trials(1)->set_state(TRIAL_WAITING);
  SweepTable table(&h.head->jobs());
  SweepRun& sweep = table.Add(SweepRun(record));

  std::vector<std::tuple<int, double, bool>> reports;  // (trial, accuracy, act)
  const Micros grace = 5'000'000;
  SweepRestore restore(&h.clock, &h.head->jobs(), grace,
                       [&](SweepRun&, TrialInfo& trial, const MetricRecord& report, const JobInfo* job, bool act) {
                         REQUIRE(job != nullptr);
                         CHECK(job->job_id() == trial.job_id());
                         reports.emplace_back(trial.index(), report.values().at("accuracy"), act);
                         return false;
                       });
  restore.Replay(table);

  const std::vector<std::tuple<int, double, bool>> expected{{1, 0.61, true}, {0, 0.50, false}, {0, 0.52, false}};
  CHECK(reports == expected);
  const SweepInfo& info = sweep.info;
  CHECK(info.trials(0).state() == TRIAL_DONE);
  CHECK(info.trials(0).reason() == "reached max_t (4 training_iteration)");
  CHECK(info.trials(0).iterations() == 0);  // counted again by the decisions, not kept from the record
  CHECK(info.trials(1).job_id() == t1);
  CHECK(info.trials(1).state() == TRIAL_ACTIVE);
  CHECK(info.trials(2).state() == TRIAL_WAITING);
  CHECK(info.trials(2).job_id().empty());
  CHECK(sweep.decisions.decided(0));
  CHECK_FALSE(sweep.decisions.decided(1));
  CHECK_FALSE(sweep.decisions.decided(2));  // still waiting: its reports will count once it runs
  CHECK(sweep.seen.at(0) == 2);
  CHECK(sweep.seen.at(1) == 1);
  REQUIRE(sweep.finish_by.count(0) == 1);
  CHECK(sweep.finish_by.at(0) == h.clock.NowMicros() + grace);
  CHECK(sweep.finish_by.count(1) == 0);
}
