// Bulk data (checkpoint uploads, their receipt on the head) runs below the
// training ranks and the control plane that share a machine with it.
#pragma once

namespace clusterd {

// Nice 19 for the calling thread only (Linux nices threads one by one):
// about 1.5% of a core that a nice-0 rank keeps busy, and all that is idle.
// Not SCHED_IDLE: under a steady load it starved, and a checkpoint that
// never reaches the store is no use to the next attempt; not nice 10: that
// still took a third of a busy rank's time (bench/checkpoints).
// `idle_io`: also the idle I/O class, for a thread whose reads may wait.
void LowerThisThreadsPriority(bool idle_io);

}  // namespace clusterd
