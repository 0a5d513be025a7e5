// Each rank's stdout and stderr go into a pipe that the agent's loop reads
// (RankRunner::TakeOutput): its read end does not block the loop, its write
// end, the rank's, blocks as a file would.
#pragma once

#include <vector>

#include "common/status.h"
#include "daemon/agent/spawn.h"

namespace clusterd {

// Opens a pipe for each request and sets its output_fd to the write end;
// returns the read ends in the same order. When one cannot be made (out of
// descriptors), none is left open and the error says why.
Result<std::vector<int>> OpenOutputPipes(std::vector<SpawnRequest>* requests);

}  // namespace clusterd
