// ctrain::preemption(): whether this rank's gang is being preempted, and
// its deadline (docs/SHARING.md "Preemption").
//
// A higher-priority job took this gang's room: the ranks get SIGTERM at
// the deadline, then the job's preemption_grace_s, then SIGKILL, and the
// job is queued again to resume from its newest stored checkpoint. A
// program that stores a checkpoint once it is told, and exits, loses
// nothing. With DDP the ranks must agree where they stop, so the examples
// ask at each epoch's end, after storing it, and survive the SIGTERM to use
// the grace for the epoch under way:
//
//   ctrain::catch_sigterm();
//   for (...) {
//     ... train an epoch ...
//     ctrain::report({{"epoch", epoch}}, ctrain::save_checkpoint(model, optimizer, epoch));
//     if (ctrain::stop_requested(ctx)) break;   // resumes at epoch + 1
//   }
//
// Cheap enough for every step: one stat() of the file the node writes
// ($CLUSTER_PREEMPTION_FILE), read again only when it changed.
#pragma once

#include <chrono>
#include <optional>

namespace ctrain {

class Context;

// The deadline of the notice to this rank's attempt; nullopt when there is
// none (or the rank runs outside clusterd).
std::optional<std::chrono::system_clock::time_point> preemption();

// From now on SIGTERM (a stop, or a preemption's deadline) no longer ends
// the process at once: it is remembered, and stop_requested() says so. The
// grace that follows it (stop_grace_ms, or preemption_grace_s) is the
// program's to finish and store an epoch; SIGKILL comes after it.
void catch_sigterm();
// Whether SIGTERM came since catch_sigterm().
bool sigterm_received();

// Whether the gang should stop now: a preemption notice or SIGTERM on any
// of its ranks. A collective (a one-value allreduce): every rank calls it
// at the same point, such as the end of each epoch.
bool stop_requested(Context& ctx);

}  // namespace ctrain
