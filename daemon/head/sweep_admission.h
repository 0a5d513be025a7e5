// Which trials of a sweep start now: in index order, while fewer than the
// limit are active. The limit is the sweep's max_concurrent, or, when it is
// 0, as many gangs as the live nodes could hold at once. Pure functions.
#pragma once

#include <vector>

#include "cluster.pb.h"

namespace clusterd {

// Gangs of num_workers x per_worker that `nodes` (ALIVE ones; their totals)
// hold at the same time, each worker placed whole on one node.
int GangsThatFit(const std::vector<NodeInfo>& nodes, const ResourceSet& per_worker, int num_workers);

// max_concurrent when set, else the gangs that fit (at least 1, so that a
// sweep on a cluster too small waits visibly rather than never admitting).
int AdmissionLimit(int max_concurrent, int gangs_that_fit);

// The indexes of the trials to admit now: the first TRIAL_WAITING ones,
// while TRIAL_ACTIVE trials plus those admitted stay within `limit`.
std::vector<int> TrialsToAdmit(const std::vector<TrialState>& states, int limit);

}  // namespace clusterd
