// ctrain::report: hand per-epoch metrics (and the checkpoint that goes with
// them) to clusterd.
//
// Every rank may call it; only rank 0 (env RANK, 0 when unset) sends, so the
// head sees one report per epoch. With CLUSTER_AGENT_SOCKET set the report
// goes over that Unix socket as one frame (see agent_wire.h) carrying
// CLUSTER_JOB_ID and CLUSTER_ATTEMPT; an unreachable agent or an error reply
// is a warning on stderr, never an exception, so it cannot kill training.
// Rank 0 also prints one line to stdout (so the rank's log, and
// `clusterctl logs -f`, show progress; without the socket it is the only output):
//   [report] epoch=3 loss=0.25 accuracy=0.9 checkpoint=/ckpt/checkpoint_000003
#pragma once

#include <string>

#include "ctrain/agent_wire.h"

namespace ctrain {

// Returns true when this call delivered the report (sent and acknowledged, or
// printed); false on ranks other than 0 and when the agent did not accept it.
bool report(const Metrics& metrics, const std::string& checkpoint = "");

}  // namespace ctrain
