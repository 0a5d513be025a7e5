// What clients read of the jobs, in bounded replies: a record, the list in
// pages (a count and a byte budget, always one item at least, an array's
// jobs grouped on request), a job's metrics in pages, and its logs in a
// byte budget shared by the ranks, which take turns. Every token and
// offset a client sends is checked, never trusted. Separate because
// reading changes nothing: it only looks at the table and at what the
// other concerns keep (placement's explanations, arrays' tallies).
// NOT thread-safe: the head's event loop owns it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "cluster.pb.h"
#include "common/job_state.h"
#include "common/logs/log_store.h"
#include "common/status.h"
#include "daemon/head/job_arrays.h"
#include "daemon/head/job_placement.h"
#include "daemon/head/job_retention.h"
#include "daemon/head/job_table.h"

namespace clusterd {

class JobQueries {
 public:
  // The bounds of what a client reads in one reply.
  static constexpr int kJobsPage = 100;                 // ListJobs' default page size
  static constexpr int kMaxJobsPage = 1000;
  static constexpr int kMetricsPage = 10000;            // GetMetrics' default and largest page size
  static constexpr int64_t kLogsReplyBytes = 1 << 20;   // GetLogs' default byte budget
  static constexpr size_t kMaxReplyBytes = 4 << 20;     // of any page, and GetLogs' largest budget

  // REQUIRES: every pointer outlives this object.
  JobQueries(const JobTable* table, const JobPlacement* placement, const JobArrays* arrays,
             const JobRetention* retention, LogStore* logs)
      : table_(table), placement_(placement), arrays_(arrays), retention_(retention), logs_(logs) {}

  // The record, with a waiting job's reason explained (JobPlacement::ExplainWait).
  Result<JobInfo> Get(const std::string& job_id) const;
  // Every job, in submission order (the dashboard, Prometheus).
  std::vector<JobInfo> List() const;
  // Every job counted by state, with the attempts started (for Prometheus).
  JobTally Tally() const;
  // Each job's newest metric report, for Prometheus.
  std::vector<std::pair<std::string, MetricRecord>> LatestMetrics() const;
  Result<ListJobsReply> ListPage(const ListJobsRequest& request) const;
  Result<LogsReply> Logs(const LogsRequest& request) const;
  Result<MetricsReply> Metrics(const JobRequest& request) const;
  // The RUNNING and RESTARTING jobs, oldest first, each with its newest
  // metric record: at most max_jobs (0: kJobsPage; at most kMaxJobsPage)
  // and about kMaxReplyBytes, one job at least; all of them counted. Walks
  // the unfinished jobs only, not every job the head keeps.
  RunningJobsReply RunningJobs(const RunningJobsRequest& request) const;

 private:
  using JobOrder = JobTable::JobOrder;
  // Where the page after `token` (a job id, number `last`) starts.
  JobOrder::const_iterator PageStart(const std::string& token, int last) const;
  // The states of the array whose first listed job is at `first` (its jobs
  // are neighbours in submission order); *last: where its last job is.
  ArrayStates CountArray(JobOrder::const_iterator first, JobOrder::const_iterator* last) const;

  const JobTable* table_;
  const JobPlacement* placement_;
  const JobArrays* arrays_;
  const JobRetention* retention_;
  LogStore* logs_;
};

}  // namespace clusterd
