// Rebuilds the head's job state from journal entries at start (DESIGN rule 7).
// An entry with `job` holds a whole job record (at submit, in a snapshot, and
// after every transition in journals of older heads) and replaces what came
// before; one with `delta` changes the record so far (see job_delta.h);
// entries with `metric` are kept in order per job; `deleted` forgets the job
// and its metrics.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "cluster.pb.h"
#include "journal.pb.h"

namespace clusterd {

struct ReplayedJobs {
  std::map<std::string, JobInfo> jobs;                        // by job_id, latest record
  std::map<std::string, std::vector<MetricRecord>> metrics;   // by job_id, in journal order
  // Above every job number the journal names, deleted jobs' included, and
  // at least what a snapshot says: where a restarted head counts on from.
  int next_job_number = 1;
};

// The job id of an entry is entry.job_id, or job.job_id when that is empty.
// Entries with neither, or with no kind set, are skipped with a warning.
ReplayedJobs ReplayJobs(const std::vector<JournalEntry>& entries);

// Just the jobs of ReplayJobs.
std::map<std::string, JobInfo> LatestJobs(const std::vector<JournalEntry>& entries);

}  // namespace clusterd
