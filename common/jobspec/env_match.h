// The submitter's side of a worker's environment (DESIGN rule 4): which of
// the variables clusterctl sees travel with a job through `env_passthrough`,
// and which names clusterd sets itself for every rank.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace clusterd {

// The variables clusterd sets per rank (RANK, WORLD_SIZE, ..., the torchrun
// names), every CLUSTER_* name (CLUSTER_TOKEN among them) and
// CUDA_VISIBLE_DEVICES (a rank's own GPUs, "" for a CPU rank). A job's `env`
// may not set them and passthrough never copies them: the submitter's RANK
// is never the worker's, and the cluster token never leaves the daemons.
const std::vector<std::string>& ReservedWorkerVariables();
bool IsReservedWorkerVariable(const std::string& name);

// True when `name` matches any of the fnmatch(3) globs ("DVC_*", "WANDB_?",
// "HF_[A-Z]*").
bool MatchesAnyPattern(const std::vector<std::string>& patterns, const std::string& name);

// The variables of `environ_like` (a NULL-terminated "NAME=value" array, as
// `environ`) whose names match a pattern, minus the reserved ones. Entries
// without '=' are skipped. `environ_like` may be null (nothing matches).
std::map<std::string, std::string> MatchPassthrough(const std::vector<std::string>& patterns,
                                                    const char* const* environ_like);
// The same over a map, for callers (and tests) that hold one.
std::map<std::string, std::string> MatchPassthrough(const std::vector<std::string>& patterns,
                                                    const std::map<std::string, std::string>& vars);

}  // namespace clusterd
