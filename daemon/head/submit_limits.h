// How many jobs the head takes: at most max_submitted_jobs not yet
// finished in the cluster, and max_submitted_jobs_per_user for each
// submitter (Slurm's MaxJobCount and MaxSubmitJobsPerUser: pending and
// running jobs count, finished ones do not). A submit that would pass
// either is refused whole, with an error that names the limit, the count
// and the config key. Every job held costs the head memory, a journal
// record and a place in every scan of the queue: a bound here is what
// keeps one client from growing the head without end.
#pragma once

#include <cstdint>
#include <string>

#include "common/config.h"
#include "common/status.h"

namespace clusterd {

class SubmitLimits {
 public:
  explicit SubmitLimits(const Config& config)
      : per_cluster_(config.max_submitted_jobs), per_submitter_(config.max_submitted_jobs_per_user) {}

  // Whether `adding` jobs fit, given the jobs not yet finished now: in the
  // whole cluster, and those of `submitter` (the jobs' owner, as a refusal
  // names them: "user alice"). ResourceExhausted when not.
  Status Admit(const std::string& submitter, int64_t submitters_now, int64_t cluster_now, int64_t adding) const;

 private:
  int64_t per_cluster_;
  int64_t per_submitter_;
};

}  // namespace clusterd
