#include "daemon/head/queue_policy/queue_policy.h"

#include <algorithm>

#include <fmt/format.h>

#include "common/logging.h"

namespace clusterd {

Result<QueuePolicySettings> QueuePolicySettings::FromConfig(const Config& config) {
  QueuePolicySettings settings;
  auto classes = PriorityClasses::Parse(config.priority_class);
  if (!classes.ok()) return classes.status();
  settings.classes = *classes;
  if (config.fair_share_half_life_s < 0) {
    return Status::InvalidArgument(
        fmt::format("fair_share_half_life_s must be >= 0, got {}", config.fair_share_half_life_s));
  }
  // Past 100 years a half-life is forever, and would overflow.
  settings.fair_share_half_life = std::min<int64_t>(config.fair_share_half_life_s, 100LL * 365 * 86400) * 1000000;
  if (config.backfill_max_jobs < 0) {
    return Status::InvalidArgument(fmt::format("backfill_max_jobs must be >= 0, got {}", config.backfill_max_jobs));
  }
  settings.backfill_max_jobs = config.backfill_max_jobs;
  return settings;
}

QueuePolicySettings QueuePolicySettings::FromConfigOrDefaults(const Config& config) {
  auto settings = FromConfig(config);
  if (settings.ok()) return *settings;
  LOG_ERROR("queue policy: {}; using the defaults", settings.status().message());
  return *FromConfig(Config());
}

QueuePolicy::QueuePolicy(const Clock* clock, JobTable* table, QueuePolicySettings settings)
    : settings_(std::move(settings)), fair_share_(clock, settings_.fair_share_half_life) {
  table->Subscribe(&charges_);
}

Status QueuePolicy::AdmitPriority(const std::string& owner, JobSpec* spec) const {
  if (!spec->priority_class().empty()) {
    auto resolved = settings_.classes.Resolve(spec->priority_class());
    if (!resolved.ok()) return resolved.status();
    spec->set_priority(*resolved);
  }
  if (!max_priority_) return Status::Ok();
  const std::optional<int> most = max_priority_(owner);
  if (most && spec->priority() > *most) {
    return Status::FailedPrecondition(fmt::format("priority {} is above {}'s maximum {} (set by an admin: clusterctl "
                                                "user set {} --max-priority N)",
                                                spec->priority(), owner.empty() ? "the submitter" : owner, *most,
                                                owner.empty() ? "NAME" : owner));
  }
  return Status::Ok();
}

std::optional<std::string> QueuePolicy::OverQuota(const TrackedJob& job) const {
  if (quotas_.empty()) return std::nullopt;  // most clusters: nothing to look up per job
  return quotas_.WouldPass(charges_.HoldersOf(job.info.owner()), JobAmounts(job.info.spec()));
}

}  // namespace clusterd
