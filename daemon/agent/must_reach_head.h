// Which of an agent's messages must reach the head however its stream
// fares, because the head's job state depends on them: a rank's exit (which
// attempt ended how), a stored checkpoint (where a retry resumes), a rank's
// report (a sweep decides on it, DVCLive plots it, and it names the newest
// checkpoint) and a start telling the MASTER_PORT the node picked (known
// nowhere else). A start without a port needs no keeping: the registration
// lists the ranks still running, and an exit covers the rest. RankRunner
// keeps them while the head is away; HeadLink keeps them until the head
// confirms them.
#pragma once

#include "agent.pb.h"

namespace clusterd {

inline bool MustReachHead(const AgentMessage& message) {
  return message.has_rank_exited() || message.has_checkpoint_stored() || message.has_metrics() ||
         (message.has_rank_started() && message.rank_started().master_port() > 0);
}

}  // namespace clusterd
