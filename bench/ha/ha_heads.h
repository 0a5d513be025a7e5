// The ha benchmark's cluster under test: two heads in HA on three etcd
// members and a radosgw, three workers and a client, each on a simulated
// machine of its own (tests/integration/ha_machines.h). Its failover is the
// leading head's machine crashing (Machine::KillAll of every process on
// it); between trials that machine's head is started again, as a standby.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "failover_trial.h"

namespace clusterd::bench {

// `trials` trials; the times in *out. False with the reason in *error when
// the cluster could not be made or a trial could not be made.
bool RunHaHeadsTrials(int trials, const std::string& noop_rank, std::chrono::milliseconds limit,
                      std::vector<FailoverTimes>* out, std::string* error);

}  // namespace clusterd::bench
