#include "daemon/head/identity/owner_job_counts.h"

#include "common/job_state.h"
#include "daemon/head/identity/access_rules.h"

namespace clusterd {

int64_t OwnerJobCounts::Unfinished(const std::string& owner) const {
  auto it = unfinished_.find(owner);
  return it == unfinished_.end() ? 0 : it->second;
}

void OwnerJobCounts::Add(const std::string& owner, int64_t delta) {
  int64_t& count = unfinished_[owner];
  count += delta;
  if (count <= 0) unfinished_.erase(owner);
}

void OwnerJobCounts::OnJobAdded(TrackedJob& job) {
  if (!IsTerminal(job.info.state())) Add(OwnerOf(job.info), 1);
}

void OwnerJobCounts::OnStateChanged(TrackedJob& job, JobState from) {
  const bool was = !IsTerminal(from);
  const bool is = !IsTerminal(job.info.state());
  if (was != is) Add(OwnerOf(job.info), is ? 1 : -1);
}

void OwnerJobCounts::OnJobRemoved(const TrackedJob& job) {
  if (!IsTerminal(job.info.state())) Add(OwnerOf(job.info), -1);
}

}  // namespace clusterd
