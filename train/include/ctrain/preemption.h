// ctrain::preemption(): whether this rank's gang is being preempted, and
// its deadline (docs/SHARING.md "Preemption").
//
// A higher-priority job took this gang's room: the ranks get SIGTERM at
// the deadline, then the job's preemption_grace_s, then SIGKILL, and the
// job is queued again to resume from its newest stored checkpoint. A
// program that saves and reports a checkpoint once it sees a deadline (and
// exits) loses nothing:
//
//   if (ctrain::preemption()) {
//     ctrain::report({{"epoch", epoch}}, ctrain::save_checkpoint(model, optimizer, epoch));
//     return 0;
//   }
//
// Cheap enough for every step: one stat() of the file the node writes
// ($CLUSTER_PREEMPTION_FILE), read again only when it changed.
#pragma once

#include <chrono>
#include <optional>

namespace ctrain {

// The deadline of the notice to this rank's attempt; nullopt when there is
// none (or the rank runs outside clusterd).
std::optional<std::chrono::system_clock::time_point> preemption();

}  // namespace ctrain
