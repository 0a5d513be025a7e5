#include "daemon/head/tracked_job.h"

#include <fmt/format.h>

namespace clusterd {

std::string DescribeExit(int exit_code, int signal) {
  return signal != 0 ? fmt::format("was killed by signal {}", signal) : fmt::format("exited with code {}", exit_code);
}

bool IsCurrent(const TrackedJob& job, const std::string& job_id, int attempt) {
  return job.active && job.info.job_id() == job_id && job.info.attempts_size() > 0 &&
         CurrentAttempt(job.info).attempt() == attempt;
}

bool RunsRank(const TrackedJob& job, const std::string& node_id, int rank) {
  return rank >= 0 && static_cast<size_t>(rank) < job.run.slots.size() && job.run.slots[rank].node_id == node_id;
}

bool PlacedOn(const TrackedJob& job, const NodeTable& nodes, const std::string& node_id, int rank) {
  const NodeInfo* node = nodes.Find(node_id);
  return node && rank >= 0 && rank < CurrentAttempt(job.info).ranks_size() &&
         CurrentAttempt(job.info).ranks(rank).node_name() == node->name();
}

bool SpeaksForRank(const TrackedJob& job, const NodeTable& nodes, const std::string& node_id, int rank) {
  if (RunsRank(job, node_id, rank)) return true;
  return job.run.adopting && PlacedOn(job, nodes, node_id, rank);
}

}  // namespace clusterd
