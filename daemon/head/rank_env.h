// The environment each rank of a job gets (DESIGN.md rule 4): the torchrun
// names, the GPUs, the cluster's own variables, the job's env and the
// submitter's passthrough variables. Pure; the head decides it all, the
// agent adds only what is local to its machine (socket, config file).
#pragma once

#include <map>
#include <string>

#include "cluster.pb.h"

namespace clusterd {

// REQUIRES: rank is one of attempt.ranks(); local_world_size is the number
// of the attempt's ranks on that rank's node.
std::map<std::string, std::string> RankEnvironment(const JobInfo& job, const AttemptInfo& attempt,
                                                   const RankInfo& rank, int local_world_size);

// The checkpoint folder of a job: checkpoint.dir (relative to working_dir),
// or <working_dir>/checkpoints/<job id> when none is given.
std::string CheckpointDir(const JobInfo& job);

}  // namespace clusterd
