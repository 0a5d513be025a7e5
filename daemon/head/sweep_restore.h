// The sweeps after a head's restart, rebuilt from their trials' jobs: the
// journal holds each sweep's latest record, the job journal its trials'
// jobs and metrics. A trial whose job was submitted just before the head
// died (not yet in its sweep's record) gets that job back; every recorded
// report goes through the sweep's decisions again, in the order the head
// took them, so that the iterations, the metrics and ASHA's rungs are as
// they were; the trials' journaled states stand. A decision the old head
// made but did not live to carry out is carried out now, and a trial DONE
// while its job ran on gets its moment to end again.
// NOT thread-safe: the head's event loop owns it.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <utility>

#include "cluster.pb.h"
#include "common/clock.h"
#include "daemon/head/job_manager.h"
#include "daemon/head/sweep_table.h"

namespace clusterd {

class SweepRestore {
 public:
  // One report of a trial through the sweep's decisions; `act`: stop the
  // trial's job when it is decided about (SweepManager's OnReport).
  using ReportFn = std::function<bool(SweepRun& sweep, TrialInfo& trial, const MetricRecord& record,
                                      const JobInfo* job, bool act)>;

  // REQUIRES: clock and jobs outlive this object. `finish_grace`: how long
  // a DONE trial's job may run on before it is stopped.
  SweepRestore(const Clock* clock, const JobManager* jobs, Micros finish_grace, ReportFn on_report);

  // Rebuilds every sweep of `table`. REQUIRES: every restored sweep is in
  // the table before any is replayed (a report may compact the journal,
  // which writes every sweep the table holds).
  void Replay(SweepTable& table) const;

 private:
  // (sweep, trial index) -> its job.
  using TrialJobs = std::map<std::pair<std::string, int>, const JobInfo*>;
  void ReplaySweep(SweepRun& sweep, const TrialJobs& trial_jobs) const;

  const Clock* clock_;
  const JobManager* jobs_;
  Micros finish_grace_;
  ReportFn on_report_;
};

}  // namespace clusterd
