// Hung gangs (docs/RELIABILITY.md "Hung gangs"): for jobs with a
// hang_timeout_s, the head follows what the nodes say of their ranks'
// activity (GangActivity decides), and once none of an attempt's ranks has
// printed, reported or used CPU for that long it ends the attempt as a
// failure: it asks the attempt's nodes to diagnose its ranks (wait
// channel, kernel stack, SIGQUIT to Python processes for their stacks,
// the last lines), waits for their answers (bounded), keeps the diagnosis
// with the attempt and kills the ranks. The job is then retried as after
// any failure (counted against max_failures), from its newest stored
// checkpoint. Separate from AttemptInterrupts: this one keeps state per
// watched attempt and talks to the nodes.
// NOT thread-safe: the head's event loop owns it.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "agent.pb.h"
#include "common/clock.h"
#include "common/config.h"
#include "daemon/head/gang_activity.h"
#include "daemon/head/job_attempts.h"
#include "daemon/head/job_table.h"
#include "daemon/head/node_table.h"

namespace clusterd {

class HangWatch {
 public:
  // Sends a command to a node's agent; false when the node has no stream.
  using SendFn = std::function<bool(const std::string& node_id, const HeadMessage& message)>;
  // How long the nodes get past hang_diagnosis_wait_ms to answer a diagnosis.
  static constexpr Micros kAnswerSlack = 5'000'000;

  // REQUIRES: every pointer outlives this object.
  HangWatch(const Clock* clock, const Config& config, JobTable* table, const NodeTable* nodes, JobAttempts* attempts,
            SendFn send)
      : clock_(clock), config_(config), table_(table), nodes_(nodes), attempts_(attempts), send_(std::move(send)) {}

  void OnRankActivity(const std::string& node_id, const RankActivity& message);
  void OnRanksDiagnosed(const std::string& node_id, const RanksDiagnosed& message);
  // Finds the gangs hung by `now` and the diagnoses overdue; `wake` learns
  // when the next may be.
  void Tick(Micros now, NextWake* wake);

  // Watched attempts (for tests).
  size_t watched() const { return watched_.size(); }

 private:
  struct Watched {
    int attempt = 0;
    GangActivity gang;
    // Hung: the attempt is ending, its nodes diagnose.
    bool diagnosing = false;
    std::string reason;                 // "attempt 0 hung: no rank ..."
    Micros answers_due = 0;
    std::set<std::string> awaited;      // nodes yet to answer
    std::vector<std::pair<std::string, RankDiagnosis>> diagnoses;  // node id, what it said
  };
  void StartDiagnosis(TrackedJob& job, Watched& watched, Micros quiet_since, Micros now);
  // Keeps the diagnosis with the attempt and kills its ranks.
  void FinishDiagnosis(const std::string& job_id, Watched& watched);
  std::string NodeName(const std::string& node_id) const;

  const Clock* clock_;
  const Config& config_;
  JobTable* table_;
  const NodeTable* nodes_;
  JobAttempts* attempts_;
  SendFn send_;
  std::map<std::string, Watched> watched_;  // by job id: attempts with a rank told idle
};

// The text kept with a hung attempt (AttemptInfo.hang_diagnosis): per rank
// its node, the process it names, its wait channel, kernel stack and last
// lines, in about `max_bytes` (each rank's part cut to its share, its
// last lines kept before its stack).
std::string FormatHangDiagnosis(const std::vector<std::pair<std::string, RankDiagnosis>>& diagnoses,
                                size_t max_bytes);
// "rank 0 waits in hrtimer_nanosleep (python3), rank 1 ...": for the reason.
std::string SummarizeWaits(const std::vector<std::pair<std::string, RankDiagnosis>>& diagnoses);

}  // namespace clusterd
