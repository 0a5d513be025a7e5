// A job's metric records, bounded: what JobManager::OnMetrics keeps of each
// report, at a cost that does not grow with the reports before it.
//
// MetricTally holds what taking a report needs to know of the records
// (the attempt's next index, each rank's last report number, their size),
// so that no report walks them. ThinMetrics keeps a job's records within
// job_metrics_max_records and job_metrics_max_mb: every 2nd record is
// dropped at a time, oldest first, so the older part of a long run gets
// coarser while the recent part stays dense; the latest record of each
// rank of the newest attempt is always kept (the value a user, a sweep and
// a retry look at last). A record's `index` stays the report's number in
// its attempt, so the gaps show what was thinned.
// NOT thread-safe: the head's event loop owns it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

#include "cluster.pb.h"

namespace clusterd {

struct MetricTally {
  bool built = false;               // false: Build it from the records first (after a restart of the head)
  int attempt = -1;                 // the attempt the counts below are of: the newest that reported
  int64_t attempt_reports = 0;      // reports taken from it: the next record's index
  std::map<int, int64_t> last_seq;  // rank -> report_seq of its latest report in that attempt
  int64_t appended = 0;             // records appended to the job in this head's life (restored ones included)
  int64_t taken = 0;                // reports taken for the job, every attempt (after a restart: as the records tell)
  int64_t bytes = 0;                // stored size of the records kept
  int64_t dropped = 0;              // records thinned away since the head started
  int64_t visited = 0;              // records looked at after Build; what tests count to see a report's cost

  // One walk over the records, after which each report is O(1) (amortised:
  // ThinMetrics walks them once per half of the bound taken).
  void Build(const std::vector<MetricRecord>& records);
  // A report of `attempt`: the counts start over when it is a new attempt.
  void StartAttempt(int attempt);
  // Whether rank's report numbered report_seq was taken already (its agent
  // sent it again after a head died before confirming it).
  bool IsRepeated(int attempt, int rank, int64_t report_seq) const;
  // The record is appended: counted.
  void Appended(const MetricRecord& record, int64_t record_bytes);
};

// Makes room for one more record of `incoming_bytes`: while the records
// would be more than max_records, or more than max_bytes, every 2nd is
// dropped (see above). Returns how many were dropped; fewer than asked
// when only the protected latest ones are left. max_records or max_bytes
// <= 0: that bound is off.
size_t ThinMetrics(std::vector<MetricRecord>* records, MetricTally* tally, int64_t incoming_bytes,
                   int64_t max_records, int64_t max_bytes);

}  // namespace clusterd
