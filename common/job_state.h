// Job states as words, and which ones are final: shared by the head and
// the CLI so both say the same thing.
#pragma once

#include <cstdint>
#include <map>

#include "cluster.pb.h"

namespace clusterd {

const char* JobStateName(JobState state);
// SUCCEEDED, FAILED, STOPPED: nothing more will happen to the job.
bool IsTerminal(JobState state);

// Jobs by state and the attempts they started (older ones summed up
// included): what Prometheus is told about jobs, summed over the head's
// records in place rather than over a copy of each.
struct JobTally {
  std::map<JobState, int64_t> by_state;
  int64_t attempts = 0;
  // Jobs preempted (Preemption::total): a counter over the head's life,
  // which deleting a job does not lower.
  int64_t preemptions = 0;
  void Add(const JobInfo& job);
};

}  // namespace clusterd
