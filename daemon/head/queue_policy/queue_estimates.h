// Estimated starts for `clusterctl queue`: each waiting job, in the order
// the queue starts them, is given the room its reservation finds (Reserve,
// from the running jobs' ends by their time limits), and that room is then
// held until the job's own time limit ends it, for the jobs after it. As
// Slurm's `squeue --start`, an estimate: a job that ends before its limit
// makes the later ones start sooner, and a held room is held from now, not
// only from the job's start (backfill may still start a job sooner in it).
#pragma once

#include <deque>
#include <optional>
#include <vector>

#include "daemon/head/queue_policy/reservation.h"

namespace clusterd {

class QueueEstimates {
 public:
  // `holds` as JobPlacement::RunningHolds gives them; copied, as are the
  // nodes: GPUs are counted as whole amounts, not by device.
  QueueEstimates(const std::vector<NodeCapacity>& available_now, const std::vector<RunningHold>& holds, Micros now);

  // When the next job in queue order could start (no sooner than now), and
  // its room held from then on; nullopt when no end of a running or
  // earlier job makes room for it (those without a time limit never end).
  std::optional<Micros> Next(const GangRequest& gang, double timeout_s);

 private:
  RunningHold Hold(Micros ends_at, const ResourceSet& per_worker, std::vector<RankSlot> slots);

  std::vector<NodeCapacity> available_;
  std::vector<RunningHold> holds_;
  Micros now_;
  // What holds_ point at (deques: their elements never move).
  std::deque<ResourceSet> per_worker_;
  std::deque<std::vector<RankSlot>> slots_;
};

}  // namespace clusterd
