// The sweeps the head knows, in submission order, and how clients see
// them: each trial with its job's state as it is now, since a trial's job
// goes on after the sweep decided about it (stopped early, done, cancelled).
// Answers Get, List and ListPage; SweepManager changes the sweeps.
// NOT thread-safe: the head's event loop owns it.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "cluster.pb.h"
#include "common/clock.h"
#include "common/status.h"
#include "daemon/head/job_manager.h"
#include "daemon/head/sweep_decisions.h"

namespace clusterd {

// One sweep as the head follows it.
struct SweepRun {
  explicit SweepRun(SweepInfo record) : info(std::move(record)), decisions(info.spec().tune()) {}
  SweepInfo info;
  SweepDecisions decisions;
  std::map<int, size_t> seen;     // trial -> its job's metric records looked at (JobManager::MetricsAppended)
  // trial -> when it is stopped unless it has ended by itself: a trial
  // DONE (max_t, a stop criterion) whose job still runs.
  std::map<int, Micros> finish_by;
};

class SweepTable {
 public:
  // REQUIRES: jobs outlives this object.
  explicit SweepTable(const JobManager* jobs) : jobs_(jobs) {}

  // REQUIRES: no sweep of the same id.
  SweepRun& Add(SweepRun run);
  void Erase(const std::string& sweep_id);
  // Null when there is none.
  SweepRun* Find(const std::string& sweep_id);
  SweepRun& at(const std::string& sweep_id) { return runs_.at(sweep_id); }
  const std::vector<std::string>& order() const { return order_; }

  Result<SweepInfo> Get(const std::string& sweep_id) const;
  std::vector<SweepInfo> List() const;
  // One page of sweeps (a sweep carries its trials, so pages are small):
  // page_size sweeps or JobManager::kMaxReplyBytes, one sweep at least.
  static constexpr int kSweepsPage = 20;
  static constexpr int kMaxSweepsPage = 100;
  Result<ListSweepsReply> ListPage(const ListSweepsRequest& request) const;
  // Every sweep's record, in submission order.
  std::vector<const SweepInfo*> Records() const;

 private:
  SweepInfo Shown(const SweepInfo& info) const;

  const JobManager* jobs_;
  std::map<std::string, SweepRun> runs_;
  std::vector<std::string> order_;
};

}  // namespace clusterd
