// What a sweep's trials add up to: its best trial, and, once every trial is
// over, whether the sweep succeeded and the reason it shows. Pure functions
// of the sweep's record.
#pragma once

#include <string>

#include "cluster.pb.h"

namespace clusterd {

// No longer waiting or active: ended by itself, a decision or a stop.
bool TrialOver(TrialState state);

// The index of the trial with the best finite metric (by the tune spec's
// mode), -1 while there is none. NaN compares false both ways, and an
// infinity is a diverged run, not a result: neither is ever best (Ray
// Tune's filter_nan_and_inf); failed trials do not count.
int BestTrial(const SweepInfo& info);

struct SweepOutcome {
  SweepState state = SWEEP_FAILED;
  std::string reason;
};
// REQUIRES: every trial over. SUCCEEDED when a trial ran to its end and
// some trial reported a finite metric; the reason counts the trials that
// ran to the end (and those ASHA stopped, `with_asha`). A metric no trial
// reported (a typo, say), or only as NaN or infinity, leaves nothing to
// compare: not a success a DVC stage should go on from, and the reason
// says what the trials reported instead.
SweepOutcome FinalOutcome(const SweepInfo& info, bool with_asha);

}  // namespace clusterd
