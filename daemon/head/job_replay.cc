#include "daemon/head/job_replay.h"

#include <algorithm>
#include <cstdio>

#include "common/logging.h"
#include "daemon/head/job_delta.h"

namespace clusterd {

ReplayedJobs ReplayJobs(const std::vector<JournalEntry>& entries) {
  ReplayedJobs out;
  size_t skipped = 0;
  size_t orphans = 0;
  for (const JournalEntry& e : entries) {
    if (e.has_snapshot()) {
      out.next_job_number = std::max(out.next_job_number, e.snapshot().next_job_number());
      continue;
    }
    std::string id = e.job_id();
    if (id.empty() && e.has_job()) id = e.job().job_id();
    if (id.empty()) {
      ++skipped;
      continue;
    }
    int number = 0;
    if (sscanf(id.c_str(), "job-%d", &number) == 1) out.next_job_number = std::max(out.next_job_number, number + 1);
    switch (e.kind_case()) {
      case JournalEntry::kJob:
        out.jobs[id] = e.job();
        break;
      case JournalEntry::kMetric:
        out.metrics[id].push_back(e.metric());
        break;
      case JournalEntry::kDeleted:
        out.jobs.erase(id);
        out.metrics.erase(id);
        break;
      case JournalEntry::kDelta: {
        auto job = out.jobs.find(id);
        if (job == out.jobs.end()) {
          ++orphans;  // its job's whole record is missing: nothing to apply it to
          break;
        }
        ApplyDelta(e.delta(), &job->second);
        break;
      }
      case JournalEntry::kRankEnd: {
        auto job = out.jobs.find(id);
        if (job == out.jobs.end()) break;
        const RankEnd& end = e.rank_end();
        for (AttemptInfo& attempt : *job->second.mutable_attempts()) {
          if (attempt.attempt() != end.attempt() || end.rank() < 0 || end.rank() >= attempt.ranks_size()) continue;
          RankInfo* rank = attempt.mutable_ranks(end.rank());
          rank->set_exited(true);
          rank->set_exit_code(end.exit_code());
          rank->set_signal(end.signal());
        }
        break;
      }
      case JournalEntry::kSnapshot:  // handled above
      case JournalEntry::kSweep:     // the sweeps' own journal holds these
        break;
      case JournalEntry::KIND_NOT_SET:
        ++skipped;
        break;
    }
  }
  // A newer head may have written kinds this one does not know; they parse
  // as KIND_NOT_SET and are worth a line, not a failure.
  if (skipped > 0) LOG_WARN("journal replay: skipped {} entries without a job id or kind", skipped);
  if (orphans > 0) LOG_WARN("journal replay: skipped {} changes of jobs whose record was not found", orphans);
  return out;
}

std::map<std::string, JobInfo> LatestJobs(const std::vector<JournalEntry>& entries) {
  return ReplayJobs(entries).jobs;
}

}  // namespace clusterd
