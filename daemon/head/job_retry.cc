#include "daemon/head/job_retry.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "common/jobspec/job_spec.h"

namespace clusterd {

namespace {

// "500ms", "4s", "1.5s", "5m", "2m30s", "1h", "1h05m".
std::string FormatDelay(int64_t ms) {
  if (ms < 1000) return fmt::format("{}ms", ms);
  if (ms < 60'000) return fmt::format("{:g}s", static_cast<double>(ms) / 1000);
  int64_t s = (ms + 500) / 1000;
  if (s < 3600) return s % 60 == 0 ? fmt::format("{}m", s / 60) : fmt::format("{}m{:02d}s", s / 60, s % 60);
  return s % 3600 / 60 == 0 ? fmt::format("{}h", s / 3600) : fmt::format("{}h{:02d}m", s / 3600, s % 3600 / 60);
}

}  // namespace

void JobRetry::Retry(TrackedJob& job, int attempt, const std::string& failure) {
  // Exponential backoff, as Kubernetes' crash loops and Nomad's reschedules
  // wait, so that a job failing at once does not spin: initial, then
  // factor times the previous wait, at most max; an attempt that ran
  // kRestartDelayResetS (10 min) starts over from initial.
  // A machine that died is no crash loop: the retry goes at once (the
  // failover time users wait for) and the backoff stays where it was.
  if (job.run.node_lost) {
    job.info.set_retry_at_unix_ms(0);
    table_->SetState(job, RESTARTING, fmt::format("attempt {} failed: {}", attempt, failure));
    table_->queue().push_front(job.info.job_id());
    return;
  }
  const RestartDelay policy = EffectiveRestartDelay(job.info.spec());
  const AttemptInfo& ended = CurrentAttempt(job.info);
  const int64_t ran_ms = ended.end_unix_ms() - ended.start_unix_ms();
  const double initial_ms = policy.initial_s() * 1000, max_ms = policy.max_s() * 1000;
  double wait_ms = initial_ms;
  if (job.info.restart_delay_ms() > 0 && ran_ms < kRestartDelayResetS * 1000) {
    wait_ms = std::min(max_ms, static_cast<double>(job.info.restart_delay_ms()) * policy.factor());
  }
  const int64_t delay_ms = std::llround(std::clamp(wait_ms, 0.0, max_ms));
  job.info.set_restart_delay_ms(delay_ms);
  if (delay_ms == 0) {
    job.info.set_retry_at_unix_ms(0);
    table_->SetState(job, RESTARTING, fmt::format("attempt {} failed: {}", attempt, failure));
    table_->queue().push_front(job.info.job_id());  // a retry goes before newer jobs
    return;
  }
  job.retry_at = clock_->NowMicros() + delay_ms * 1000;
  job.info.set_retry_at_unix_ms(clock_->UnixMillis() + delay_ms);
  table_->SetState(job, RESTARTING,
           fmt::format("retrying in {} after attempt {} failed: {}", FormatDelay(delay_ms), attempt, failure));
}

bool JobRetry::DueNow(TrackedJob& job, Micros now, NextWake* wake) {
  if (job.retry_at == 0) return false;
  if (now < job.retry_at) {
    wake->Want(job.retry_at);
    return false;
  }
  // Its restart delay is over: first in line, as a retry is.
  job.retry_at = 0;
  job.info.set_retry_at_unix_ms(0);
  table_->queue().push_front(job.info.job_id());
  return true;
}

}  // namespace clusterd
