#include "common/job_state.h"

namespace clusterd {

const char* JobStateName(JobState state) {
  switch (state) {
    case PENDING: return "PENDING";
    case RUNNING: return "RUNNING";
    case RESTARTING: return "RESTARTING";
    case SUCCEEDED: return "SUCCEEDED";
    case FAILED: return "FAILED";
    case STOPPED: return "STOPPED";
    case INFEASIBLE: return "INFEASIBLE";
    default: return "UNKNOWN";
  }
}

bool IsTerminal(JobState state) { return state == SUCCEEDED || state == FAILED || state == STOPPED; }

void JobTally::Add(const JobInfo& job) {
  ++by_state[job.state()];
  attempts += job.attempts_size() + job.older_attempts().count();
}

}  // namespace clusterd
