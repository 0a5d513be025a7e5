// The shipping benchmark's three simulated machines: the benchmarks' shared
// SimCluster (bench/common/sim_cluster.h) with one worker, `w1`: `head` runs
// only the head, `w1` the only node agent, `client` no daemon at all (it
// holds the working_dir and runs clusterctl).
#pragma once

#include "sim_cluster.h"

namespace clusterd::bench {

class ShipCluster : public SimCluster {
 public:
  ShipCluster() : SimCluster({"w1"}), w1(*workers[0]) {}

  testing::Machine& w1;
};

}  // namespace clusterd::bench
