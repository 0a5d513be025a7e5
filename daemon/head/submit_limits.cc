#include "daemon/head/submit_limits.h"

#include <fmt/format.h>

namespace clusterd {

namespace {

std::string Jobs(int64_t count) { return fmt::format("{} job{}", count, count == 1 ? "" : "s"); }

}  // namespace

Status SubmitLimits::Admit(const std::string& submitter, int64_t submitters_now, int64_t cluster_now,
                           int64_t adding) const {
  if (adding <= 0) return Status::Ok();
  // Per submitter first: it is the one a submitter can do something about.
  if (per_submitter_ > 0 && submitters_now + adding > per_submitter_) {
    return Status::ResourceExhausted(fmt::format(
        "refused: {} has {} not yet finished, and {} more would pass the limit of {} per user (config "
        "max_submitted_jobs_per_user); nothing was submitted. Wait for jobs to finish, or stop some (clusterctl "
        "stop)",
        submitter, Jobs(submitters_now), Jobs(adding), per_submitter_));
  }
  if (per_cluster_ > 0 && cluster_now + adding > per_cluster_) {
    return Status::ResourceExhausted(fmt::format(
        "refused: the cluster has {} not yet finished, and {} more would pass its limit of {} (config "
        "max_submitted_jobs); nothing was submitted. Wait for jobs to finish, or stop some (clusterctl stop)",
        Jobs(cluster_now), Jobs(adding), per_cluster_));
  }
  return Status::Ok();
}

}  // namespace clusterd
