// The environment each rank of a job gets (DESIGN.md rule 4): the torchrun
// names, the GPUs, the cluster's own variables, the job's env and the
// submitter's passthrough variables. Pure; the head decides it all, the
// agent adds only what is local to its machine (socket, working folder, the
// config file: a config of up to 1 MiB does not fit Linux's 128 KiB limit
// on one environment string, so it travels as a file).
#pragma once

#include <map>
#include <string>

#include "agent.pb.h"
#include "cluster.pb.h"

namespace clusterd {

// REQUIRES: rank is one of attempt.ranks(); local_world_size is the number
// of the attempt's ranks on that rank's node, node_ip that node's address.
std::map<std::string, std::string> RankEnvironment(const JobInfo& job, const AttemptInfo& attempt,
                                                   const RankInfo& rank, int local_world_size,
                                                   const std::string& node_ip);

// The checkpoint folder of a job: checkpoint.dir, or checkpoints/<job id>
// when none is given. A relative folder is relative to the working folder:
// with a shipped package only the node knows where that is, so it stays
// relative and the agent resolves it; a shared working_dir makes it absolute.
std::string CheckpointDir(const JobInfo& job);

// Moves what every rank of a launch shares into LaunchRanks.env, so that a
// node with many ranks gets it once, not once per rank (a 4096-rank launch
// with a large env went past the agent's 4 MiB message limit).
void FactorSharedEnv(LaunchRanks* launch);

// Whether the job's code travels as a package (else it runs in working_dir as is).
bool ShipsPackage(const JobSpec& spec);

}  // namespace clusterd
