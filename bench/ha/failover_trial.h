// One failover trial of the ha benchmark, the same for an HA pair of heads
// and for a single head: with every worker registered, the head that serves
// dies (`Target::kill`), and three clocks run from that moment:
//   answering:  the first `clusterctl status` on the client that succeeds;
//   registered: every worker ALIVE with a newer incarnation than before the
//               kill (a restored node is listed ALIVE before its agent has
//               registered again: the incarnation says that it has);
//   ranks:      a job submitted at once (retried until a head takes it) has
//               every rank started, by the ranks' own clock (noop_rank's
//               start file, CLOCK_REALTIME, which every simulated machine
//               shares).
// The status poll and the submission run side by side, so neither waits
// for the other.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "machines.h"

namespace clusterd::bench {

// What a trial needs of the cluster under test.
struct FailoverTarget {
  // `clusterctl ARGS` on the client, reaching whichever head serves.
  std::function<testing::RunResult(const std::vector<std::string>& args, std::chrono::milliseconds timeout)> ctl;
  testing::Machine* client = nullptr;  // where ctl runs: the job file is written there
  std::vector<testing::Machine*> workers;
  // The head that serves dies; returns at once (a restart it issues runs on).
  std::function<void()> kill;
  // Brings the cluster back to full strength for the next trial (the dead
  // machine's head running again); false with the reason in *error.
  std::function<bool(std::string* error)> recover;
};

struct FailoverTimes {
  double answering_ms = -1, registered_ms = -1, ranks_ms = -1;  // -1: never, within the limit
  int submit_tries = 0;  // clusterctl submits until one was taken
};

// Copies noop_rank onto every worker (the job names it by its path there:
// no working_dir, so no package has to reach a store during the failover).
bool InstallRankProgram(const FailoverTarget& target, const std::string& noop_rank, std::string* error);

// One trial; `tag` names the job and its start files. False with the reason
// in *error when the trial could not be made (a clock that never stopped is
// not an error: it stays -1 and the table says so).
bool RunFailoverTrial(const FailoverTarget& target, const std::string& tag, std::chrono::milliseconds limit,
                      FailoverTimes* times, std::string* error);

}  // namespace clusterd::bench
