// The results issue's scenario on simulated machines, shared by the run
// with the head's own store and the run with the store in S3: a 2-rank MLP
// on three workers loses rank 0's whole machine after its epoch-1
// checkpoint; the next attempt resumes at epoch 2 on the other machines;
// --follow exits 0, and the client, which alone holds the job's folder,
// gets the DVCLive files and model.pt (which scores exactly what the job
// reported) and, with `fetch --checkpoint`, the last epoch's checkpoint.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "machines.h"

namespace clusterd::testing {

// The started cluster's workers, the client machine and the environment
// that reaches the head from it.
struct RankZeroLossCluster {
  SimNetwork* net = nullptr;
  std::vector<Machine*> workers;
  Machine* client = nullptr;
  std::map<std::string, std::string> env;
};

// Runs the scenario, REQUIREing each step. The last checkpoint ends up in
// the client's /tmp/ckpt/checkpoint_000002.
void RunRankZeroLoss(const RankZeroLossCluster& cluster);

}  // namespace clusterd::testing
