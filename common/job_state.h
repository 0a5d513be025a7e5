// Job states as words, and which ones are final: shared by the head and
// the CLI so both say the same thing.
#pragma once

#include "cluster.pb.h"

namespace clusterd {

const char* JobStateName(JobState state);
// SUCCEEDED, FAILED, STOPPED: nothing more will happen to the job.
bool IsTerminal(JobState state);

}  // namespace clusterd
