// The ha benchmark's baseline: a single head (no --ha) on its own simulated
// machine, bench/common's SimCluster (head, w1-w3, client). Its "failover"
// is the head machine's crash (every process SIGKILLed, Machine::KillAll)
// and `clusterd start --head` issued on it at once, on the same state
// folder, so that the restart's own time counts from the kill.
#pragma once

#include <string>
#include <vector>

#include "failover_trial.h"

namespace clusterd::bench {

// `trials` trials; the times in *out. False with the reason in *error when
// the cluster could not be made or a trial could not be made.
bool RunSingleHeadTrials(int trials, const std::string& noop_rank, std::chrono::milliseconds limit,
                         std::vector<FailoverTimes>* out, std::string* error);

}  // namespace clusterd::bench
