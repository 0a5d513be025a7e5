// The preemption notice a node gives its ranks (docs/SHARING.md
// "Preemption"): the head's PreemptRanks becomes a small file beside the
// attempt's config file, named by the ranks' CLUSTER_PREEMPTION_FILE, which
// ctrain::preemption() and get_context().should_preempt() stat at each
// step. A file, not a reply on the report socket: a rank that never
// reports still sees it, and a poll costs one stat() with no notice.
#pragma once

#include <string>

#include "agent.pb.h"
#include "common/status.h"

namespace clusterd {

// Where the notice of that attempt lies (whether or not it was given).
std::string PreemptionNoticePath(const std::string& logs_dir, const std::string& job_id, int attempt);

// Writes the notice whole (a rename): the deadline in unix ms, then the
// job that preempts, on one line.
Status WritePreemptionNotice(const std::string& logs_dir, const PreemptRanks& notice);

}  // namespace clusterd
