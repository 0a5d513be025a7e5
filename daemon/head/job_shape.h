// What a job's gang asks, as the scheduler reads it and as a key: jobs
// whose gangs ask alike wait alike, so the head judges a shape once rather
// than each of 100,000 jobs that ask the same (InfeasibleShapes,
// PendingDemands).
#pragma once

#include <string>

#include "cluster.pb.h"
#include "daemon/head/scheduler.h"

namespace clusterd {

GangRequest GangOf(const JobSpec& spec);

// Jobs whose gangs ask alike: the same workers, placement (when
// `placement`) and resources each (amounts of zero left out, as
// SameAmounts does). `infeasible` tells apart, for the demands' summary,
// those that cannot fit from those that wait.
std::string ShapeKey(const JobSpec& spec, bool placement, bool infeasible);

}  // namespace clusterd
