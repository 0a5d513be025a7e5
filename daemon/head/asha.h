// Asynchronous successive halving (Li et al. 2018) for one sweep, as Ray's
// AsyncHyperBandScheduler implements it with one bracket: rungs at
// grace_period x reduction_factor^k below max_t; a trial whose time reaches
// a rung it has not yet been recorded at is recorded there, and stopped when
// its value is below the rung's (1 - 1/rf) quantile of the values recorded
// there before it (numpy's linear percentile). A trial whose time reaches
// max_t is done. mode min negates values, as Ray does. Pure; not thread-safe.
#pragma once

#include <map>
#include <optional>
#include <vector>

#include "cluster.pb.h"

namespace clusterd {

class Asha {
 public:
  enum class Action { kContinue, kStop, kDone };
  struct Decision {
    Action action = Action::kContinue;
    int rung = -1;        // the rung recorded at (0: grace_period), -1: none
    double value = 0;     // the trial's value, as reported
    double cutoff = 0;    // kStop: the rung's cutoff, as reported values go
  };

  // REQUIRES: spec passed ValidateTuneSpec.
  Asha(const AshaSpec& spec, bool mode_min);

  // Milestones (in time_attr units), ascending.
  const std::vector<double>& rungs() const { return milestones_; }
  // A report of `trial` at `time` with the metric `value`.
  Decision OnResult(int trial, double time, double value);
  // A trial that failed for good: its values leave every rung.
  void Remove(int trial);
  // The cutoff a new arrival at `rung` must reach, as reported values go;
  // none while nothing is recorded there.
  std::optional<double> Cutoff(int rung) const;
  // "early-stopped by ASHA at rung r (value v < cutoff c)".
  std::string StopReason(const Decision& decision) const;

 private:
  std::optional<double> SignedCutoff(int rung) const;

  double max_t_;
  double rf_;
  double sign_;                                  // -1 for mode min
  std::vector<double> milestones_;
  std::vector<std::map<int, double>> recorded_;  // by rung: trial -> signed value
};

// The (0..1) quantile of `values` with linear interpolation, as numpy's
// percentile. REQUIRES: values not empty.
double LinearQuantile(std::vector<double> values, double q);

}  // namespace clusterd
