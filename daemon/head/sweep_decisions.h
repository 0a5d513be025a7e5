// What one sweep's trials' rank-0 reports decide, a report at a time: each
// trial's training_iteration (counted by the head: a retry goes on from the
// checkpoint it resumed from, as Ray Tune's restored trials do, so that a
// trial's epochs stay within max_t and its rungs are not entered twice),
// its last metrics and metric, and whether ASHA (asha.h) or a stop
// criterion ends it. A trial is decided about once; its later reports are
// not looked at. It decides and records; acting on a decision (stopping
// the job) is the SweepManager's. NOT thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "cluster.pb.h"
#include "daemon/head/asha.h"

namespace clusterd {

class SweepDecisions {
 public:
  // REQUIRES: tune passed ValidateTuneSpec.
  explicit SweepDecisions(const TuneSpec& tune);

  struct Decision {
    bool metric = false;        // the report carried the sweep's metric: the best trial may change
    bool stop = false;          // the trial ends here (its state and reason say how)
    TrialState ends_as = TRIAL_DONE;  // DONE: max_t or a stop criterion; EARLY_STOPPED: ASHA
    std::string reason;
  };
  // One report of `trial`, whose job (null when gone) says which
  // checkpoint each attempt restored. Updates the trial's iterations, last
  // metrics and metric; on a decision, its state and reason too. Reports
  // of other ranks decide nothing.
  Decision OnReport(TrialInfo& trial, const MetricRecord& record, const JobInfo* job);

  bool decided(int trial) const;
  // A trial whose end is already known (restored from the journal).
  void MarkDecided(int trial) { decided_[trial] = true; }
  // A trial that failed for good: its values leave ASHA's rungs.
  void Forget(int trial);
  bool has_asha() const { return asha_.has_value(); }

 private:
  // Where training_iteration goes on from in `attempt`: the iteration of the
  // report that carried the checkpoint it restored (0: none).
  int64_t IterationsRestored(int trial, int attempt, const JobInfo* job) const;

  TuneSpec tune_;
  std::optional<Asha> asha_;                  // none without a scheduler
  std::map<int, int> attempt_;                // trial -> the attempt its iterations count
  // trial -> checkpoint folder name -> the iteration of the report that carried it
  std::map<int, std::map<std::string, int64_t>> checkpoint_iteration_;
  std::map<int, bool> decided_;               // trial -> ended by a decision (early stop, max_t, criterion)
};

}  // namespace clusterd
