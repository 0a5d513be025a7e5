// One failover trial of the checkpoints benchmark: a 2-rank STRICT_SPREAD
// job (max_failures 1) whose rank 0 saves one checkpoint of `mib` MiB and
// keeps stepping; once the head's store holds it, every process of rank 0's
// machine is SIGKILLed (Machine::KillAll), and the clock runs until both
// ranks of attempt 1 have started with that checkpoint in their
// CLUSTER_CHECKPOINT_DIR (their own start times, ckpt_rank). The daemons'
// logs split the time into the product's steps. Afterwards the job is
// cleared and the dead machine's daemon started again. With `power_loss`
// the machine's cable is pulled first (Machine::CutLink), so that no FIN of
// its dying connections reaches the head, which then sees the death only
// by --node-timeout-ms; the cable goes back in before the restart.
#pragma once

#include <cstdint>
#include <string>

#include "sim_cluster.h"

namespace clusterd::bench {

struct FailoverTimes {
  int64_t kill_ns = 0;      // right before KillAll (or CutLink)
  int64_t dead_ns = 0;      // head log: the node ALIVE -> DEAD
  int64_t ended_ns = 0;     // head log: RUNNING -> RESTARTING (attempt 0's other rank is gone)
  int64_t placed_ns = 0;    // head log: RESTARTING -> RUNNING (attempt 1 placed)
  int64_t restored_ns = 0;  // worker logs: "restored", the later of the two nodes
  int64_t running_ns = 0;   // the later of the two ranks' own start times
  bool parts = false;       // every log line above was found
  uint64_t bytes = 0;       // the restored checkpoint's bytes, as the ranks found it
  double Ms(int64_t from, int64_t to) const { return static_cast<double>(to - from) / 1e6; }
  double TotalMs() const { return Ms(kill_ns, running_ns); }
};

// `index` makes the job's tag unique. False with the reason in *error.
bool RunFailover(SimCluster& cluster, int mib, int index, bool power_loss, FailoverTimes* times, std::string* error);

}  // namespace clusterd::bench
