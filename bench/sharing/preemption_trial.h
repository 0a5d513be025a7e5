// bench/sharing's preemption trials on simulated machines (head, w1, w2,
// client; one CPU per worker): a 2-rank low-priority job (ckpt_rank victim,
// a checkpoint each epoch) fills the cluster; once it has stored a
// checkpoint and is half into its next epoch, a 2-rank high-priority job
// (ckpt_rank start) is submitted from the client. Timed: that submit to the
// later of the high-priority ranks' own start times. Counted: the steps the
// victim's rank 0 had done when it stopped, less the steps of the
// checkpoint its next attempt resumed from. The victim (20 epochs, long
// enough to outlast any grace) must then
// SUCCEED with max_failures 0. Without `victim` (the baseline), the
// high-priority job is submitted to the idle cluster.
#pragma once

#include <cstdint>
#include <string>

#include "sim_cluster.h"

namespace clusterd::bench {

struct PreemptionTrial {
  double submit_to_running_ms = 0;
  int64_t steps_lost = 0;
  // With a victim, the same submit to each step of its preemption, from
  // the daemons' logs (whole milliseconds; -1: not found): the head's
  // notice, its deadline (the attempt ended, SIGTERM sent), the victim's
  // last rank down on its node, its attempt ended in the head
  // (RESTARTING), and the high-priority job placed.
  double noticed_ms = -1, deadline_ms = -1, victim_down_ms = -1, victim_ended_ms = -1, placed_ms = -1;
};

struct PreemptionSetup {
  std::string victim;          // ckpt_rank's PREEMPT: on-notice, ignore or stubborn; "": no victim
  int grace_s = 2;             // the victim's preemption_grace_s
  int epoch_steps = 20;
};

// `index` makes the jobs' tags unique. False with the reason in *error.
bool RunPreemptionTrial(SimCluster& cluster, const PreemptionSetup& setup, int index, PreemptionTrial* trial,
                        std::string* error);

}  // namespace clusterd::bench
