// The queue policy's state and rules beside the job lifecycle
// (docs/SHARING.md, "Priorities, fair share and quotas"): the priority
// classes and each user's maximum, applied at submit; fair share and
// quotas, charged by the running jobs (RunningCharges, a listener of the
// job table); and backfill's depth. JobPlacement orders the queue and
// starts jobs by them.
// NOT thread-safe: the head's event loop owns it.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "cluster.pb.h"
#include "common/clock.h"
#include "common/config.h"
#include "common/status.h"
#include "daemon/head/job_table.h"
#include "daemon/head/queue_policy/fair_share.h"
#include "daemon/head/queue_policy/priority_classes.h"
#include "daemon/head/queue_policy/quotas.h"
#include "daemon/head/queue_policy/running_charges.h"

namespace clusterd {

struct QueuePolicySettings {
  PriorityClasses classes;
  Micros fair_share_half_life = 0;
  int backfill_max_jobs = 0;

  // From the config table's priority_class, fair_share_half_life_s and
  // backfill_max_jobs; an error naming the key that is wrong.
  static Result<QueuePolicySettings> FromConfig(const Config& config);
  // The same, but what is wrong is logged and left at its default: for a
  // head whose config `clusterd start` already checked with FromConfig.
  static QueuePolicySettings FromConfigOrDefaults(const Config& config);
};

class QueuePolicy {
 public:
  // The highest priority a user's jobs may ask (an admin's setting);
  // nullopt: no cap (admins, users without one).
  using MaxPriorityFn = std::function<std::optional<int>(const std::string& user)>;

  // Subscribes its RunningCharges to the table. REQUIRES: clock and table outlive this object.
  QueuePolicy(const Clock* clock, JobTable* table, QueuePolicySettings settings);

  void SetMaxPriority(MaxPriorityFn max_priority) { max_priority_ = std::move(max_priority); }
  void SetGroups(RunningCharges::GroupsFn groups) { charges_.SetGroups(std::move(groups)); }

  // At submit: a priority class becomes its number, and a priority above
  // the owner's maximum is refused, naming the rule.
  Status AdmitPriority(const std::string& owner, JobSpec* spec) const;
  // A quota of one of the job's holders it would pass were it to start
  // now, as a reason ("team-a uses 8 of 8 GPUs"); nullopt when none.
  std::optional<std::string> OverQuota(const TrackedJob& job) const;
  // Runs beyond its user's or a group's quota (started so with borrow: true).
  bool IsBorrowing(const TrackedJob& job) const { return charges_.IsBorrowing(job); }

  FairShare& fair_share() { return fair_share_; }
  Quotas& quotas() { return quotas_; }
  const Quotas& quotas() const { return quotas_; }
  const RunningCharges& charges() const { return charges_; }
  const QueuePolicySettings& settings() const { return settings_; }

 private:
  QueuePolicySettings settings_;
  FairShare fair_share_;
  Quotas quotas_;
  RunningCharges charges_{&fair_share_, &quotas_};
  MaxPriorityFn max_priority_;
};

}  // namespace clusterd
