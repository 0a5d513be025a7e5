// Who sees a job's reported metrics (identity/shown_to.h, access_rules.h):
// its owner and admins, as its logs.
#include <catch2/catch.hpp>

#include "daemon/head/identity/access_rules.h"
#include "daemon/head/identity/shown_to.h"

using namespace clusterd;

TEST_CASE("a job's reported metrics are its owner's and admins', as its logs are", "[identity]") {
  Principal alice{Principal::Kind::kUser, "alice", false, {}};
  Principal bob{Principal::Kind::kUser, "bob", false, {}};
  Principal root{Principal::Kind::kUser, "root", true, {}};
  CHECK(MayActOn(bob, "job-0007", "alice", OwnedAction::kReadMetrics).message() ==
        "job-0007 belongs to alice; bob may not read its metrics");
  CHECK(MayActOn(alice, "job-0007", "alice", OwnedAction::kReadMetrics).ok());
  CHECK(MayActOn(root, "job-0007", "alice", OwnedAction::kReadMetrics).ok());

  RunningJobRecord running;
  running.mutable_job()->set_job_id("job-0007");
  running.mutable_job()->set_owner("alice");
  (*running.mutable_latest()->mutable_values())["loss"] = 0.25;
  RunningJobRecord shown = running;
  HideOthersData(bob, &shown);
  CHECK(!shown.has_latest());
  CHECK(shown.job().owner() == "alice");  // the record itself shows
  shown = running;
  HideOthersData(alice, &shown);
  CHECK(shown.latest().values().at("loss") == 0.25);
  shown = running;
  HideOthersData(root, &shown);
  CHECK(shown.has_latest());

  SweepInfo sweep;
  sweep.set_owner("alice");
  TrialInfo* trial = sweep.add_trials();
  trial->set_job_id("job-0008");
  (*trial->mutable_last_metrics())["accuracy"] = 0.9;
  trial->set_has_metric(true);
  trial->set_metric(0.9);
  SweepInfo others = sweep;
  HideOthersData(bob, &others);
  CHECK(others.trials(0).last_metrics().empty());
  CHECK(!others.trials(0).has_metric());
  CHECK(others.trials(0).metric() == 0);
  CHECK(others.trials(0).job_id() == "job-0008");
  SweepInfo own = sweep;
  HideOthersData(alice, &own);
  CHECK(own.trials(0).has_metric());
  CHECK(own.trials(0).last_metrics().at("accuracy") == 0.9);
}
