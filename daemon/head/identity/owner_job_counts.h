// How many jobs each owner has not yet finished (pending and running), kept
// as the job table changes: what max_submitted_jobs_per_user counts
// (SubmitLimits), without a walk over every job per submit.
// NOT thread-safe: the head's event loop owns it.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>

#include "daemon/head/job_table.h"

namespace clusterd {

class OwnerJobCounts final : public JobEvents {
 public:
  int64_t Unfinished(const std::string& owner) const;

  void OnJobAdded(TrackedJob& job) override;
  void OnStateChanged(TrackedJob& job, JobState from) override;
  void OnJobRemoved(const TrackedJob& job) override;

 private:
  void Add(const std::string& owner, int64_t delta);

  std::unordered_map<std::string, int64_t> unfinished_;  // by owner (OwnerOf), only counts above 0
};

}  // namespace clusterd
