// ASHA on hand-made report sequences, checked against what Ray's
// AsyncHyperBandScheduler (one bracket) decides for the same sequence; and
// max_concurrent admission.
#include <catch2/catch.hpp>

#include <vector>

#include "daemon/head/asha.h"
#include "daemon/head/sweep_admission.h"

using namespace clusterd;

namespace {

AshaSpec Spec(double max_t, double grace, double rf) {
  AshaSpec spec;
  spec.set_time_attr("training_iteration");
  spec.set_max_t(max_t);
  spec.set_grace_period(grace);
  spec.set_reduction_factor(rf);
  return spec;
}

}  // namespace

TEST_CASE("ASHA rungs sit at grace_period x rf^k below max_t", "[asha]") {
  CHECK(Asha(Spec(10, 1, 3), false).rungs() == std::vector<double>{1, 3, 9});
  CHECK(Asha(Spec(4, 1, 3), false).rungs() == std::vector<double>{1, 3});
  CHECK(Asha(Spec(9, 1, 3), false).rungs() == std::vector<double>{1, 3, 9});  // log(9)/log(3) is exactly 2
  CHECK(Asha(Spec(100, 1, 4), false).rungs() == std::vector<double>{1, 4, 16, 64});
  CHECK(Asha(Spec(100, 10, 2), false).rungs() == std::vector<double>{10, 20, 40, 80});
  CHECK(Asha(Spec(1, 1, 2), false).rungs() == std::vector<double>{1});
}

TEST_CASE("linear quantile matches numpy.percentile", "[asha]") {
  CHECK(LinearQuantile({0.5}, 2.0 / 3) == 0.5);
  CHECK(LinearQuantile({0.2, 0.8}, 2.0 / 3) == Approx(0.6));      // np.percentile([.2,.8], 66.67)
  CHECK(LinearQuantile({3, 1, 2, 4}, 0.75) == Approx(3.25));      // np.percentile([1,2,3,4], 75)
  CHECK(LinearQuantile({1, 2, 3, 4, 5}, 0.5) == 3);
}

TEST_CASE("ASHA: the first arrival at a rung continues, a later one below the cutoff stops", "[asha]") {
  Asha asha(Spec(10, 1, 3), false);
  auto d = asha.OnResult(0, 1, 0.80);
  CHECK(d.action == Asha::Action::kContinue);
  CHECK(d.rung == 0);
  CHECK(asha.Cutoff(0) == Approx(0.80));
  // Cutoff over {0.80}: 0.80. 0.70 < 0.80: stopped, and recorded all the same.
  d = asha.OnResult(1, 1, 0.70);
  CHECK(d.action == Asha::Action::kStop);
  CHECK(d.cutoff == Approx(0.80));
  CHECK(asha.StopReason(d) == "early-stopped by ASHA at rung 0 (value 0.7 < cutoff 0.8)");
  // Cutoff over {0.70, 0.80} at 2/3: 0.7667. 0.90 promotes.
  CHECK(asha.Cutoff(0) == Approx(0.7 + 0.1 * 2 / 3.0));
  CHECK(asha.OnResult(2, 1, 0.90).action == Asha::Action::kContinue);
  CHECK(asha.OnResult(3, 1, 0.76).action == Asha::Action::kStop);
}

TEST_CASE("ASHA: a trial is judged once per rung, between rungs it continues", "[asha]") {
  Asha asha(Spec(10, 1, 3), false);
  asha.OnResult(0, 1, 0.9);
  CHECK(asha.OnResult(1, 1, 0.95).action == Asha::Action::kContinue);
  // Iteration 2 of trial 1: no new rung, whatever its value.
  auto d = asha.OnResult(1, 2, 0.10);
  CHECK(d.action == Asha::Action::kContinue);
  CHECK(d.rung == -1);
  // Trial 0 reaches rung 1 (t=3) first: recorded, continues.
  d = asha.OnResult(0, 3, 0.91);
  CHECK(d.rung == 1);
  CHECK(d.action == Asha::Action::kContinue);
  // Trial 1 at t=3 below 0.91: stopped at rung 1.
  d = asha.OnResult(1, 3, 0.5);
  CHECK(d.action == Asha::Action::kStop);
  CHECK(d.rung == 1);
  // Trial 0 at t=4: already recorded at rung 1, nothing to decide.
  CHECK(asha.OnResult(0, 4, 0.0).rung == -1);
}

TEST_CASE("ASHA: a report that skips a rung is recorded at the highest one it reached", "[asha]") {
  Asha asha(Spec(10, 1, 3), false);
  auto d = asha.OnResult(0, 5, 0.5);
  CHECK(d.rung == 1);
  CHECK_FALSE(asha.Cutoff(0).has_value());
}

TEST_CASE("ASHA: a value equal to the cutoff continues", "[asha]") {
  Asha asha(Spec(10, 1, 3), false);
  asha.OnResult(0, 1, 0.5);
  asha.OnResult(1, 1, 0.5);
  CHECK(asha.OnResult(2, 1, 0.5).action == Asha::Action::kContinue);  // cutoff 0.5; 0.5 < 0.5 is false
  CHECK(asha.OnResult(3, 1, 0.4999).action == Asha::Action::kStop);
}

TEST_CASE("ASHA mode min: lower is better", "[asha]") {
  Asha asha(Spec(10, 1, 3), true);
  asha.OnResult(0, 1, 0.30);
  asha.OnResult(1, 1, 0.60);
  // Signed values {-0.3, -0.6}: cutoff -0.4, i.e. a loss of 0.4.
  CHECK(asha.Cutoff(0) == Approx(0.4));
  auto d = asha.OnResult(2, 1, 0.45);
  CHECK(d.action == Asha::Action::kStop);
  CHECK(asha.StopReason(d) == "early-stopped by ASHA at rung 0 (value 0.45 > cutoff 0.4)");
  CHECK(asha.OnResult(3, 1, 0.10).action == Asha::Action::kContinue);
}

TEST_CASE("ASHA: reaching max_t is done, not judged", "[asha]") {
  Asha asha(Spec(4, 1, 3), false);
  asha.OnResult(0, 3, 0.9);
  CHECK(asha.OnResult(1, 4, 0.1).action == Asha::Action::kDone);
}

TEST_CASE("ASHA: a failed trial leaves the rungs", "[asha]") {
  Asha asha(Spec(10, 1, 3), false);
  asha.OnResult(0, 1, 0.9);
  asha.Remove(0);
  CHECK_FALSE(asha.Cutoff(0).has_value());
  CHECK(asha.OnResult(1, 1, 0.1).action == Asha::Action::kContinue);
}

TEST_CASE("ASHA: twelve trials, a third or more stopped at the first rung", "[asha]") {
  Asha asha(Spec(4, 1, 3), false);
  int stopped = 0;
  // Arrivals in a shuffled order of quality, as a sweep's first epochs end.
  const double first[12] = {0.80, 0.62, 0.84, 0.71, 0.55, 0.83, 0.78, 0.66, 0.86, 0.74, 0.69, 0.81};
  for (int t = 0; t < 12; ++t) stopped += asha.OnResult(t, 1, first[t]).action == Asha::Action::kStop;
  CHECK(stopped >= 4);
}

TEST_CASE("max_concurrent admission", "[asha][sweep]") {
  using S = std::vector<TrialState>;
  CHECK(TrialsToAdmit(S(5, TRIAL_WAITING), 2) == std::vector<int>{0, 1});
  CHECK(TrialsToAdmit({TRIAL_DONE, TRIAL_ACTIVE, TRIAL_WAITING, TRIAL_WAITING, TRIAL_WAITING}, 2) == std::vector<int>{2});
  CHECK(TrialsToAdmit({TRIAL_ACTIVE, TRIAL_ACTIVE, TRIAL_WAITING}, 2).empty());
  CHECK(TrialsToAdmit({TRIAL_EARLY_STOPPED, TRIAL_FAILED, TRIAL_WAITING, TRIAL_WAITING}, 3) == std::vector<int>{2, 3});
  CHECK(AdmissionLimit(4, 10) == 4);
  CHECK(AdmissionLimit(0, 3) == 3);
  CHECK(AdmissionLimit(0, 0) == 1);
}

TEST_CASE("gangs that fit count whole workers per live node", "[asha][sweep]") {
  std::vector<NodeInfo> nodes(3);
  for (auto& n : nodes) {
    n.set_state(ALIVE);
    (*n.mutable_total()->mutable_amounts())["CPU"] = 3;
  }
  nodes[2].set_state(DEAD);
  ResourceSet per;
  (*per.mutable_amounts())["CPU"] = 2;
  CHECK(GangsThatFit(nodes, per, 1) == 2);  // one per live node: 3 CPUs hold one 2-CPU worker
  (*per.mutable_amounts())["CPU"] = 1;
  CHECK(GangsThatFit(nodes, per, 2) == 3);  // 6 workers, gangs of 2
  (*per.mutable_amounts())["GPU"] = 1;
  CHECK(GangsThatFit(nodes, per, 1) == 0);
}
