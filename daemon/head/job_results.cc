#include "daemon/head/job_results.h"

#include <algorithm>

#include <fmt/chrono.h>
#include <fmt/format.h>

#include "common/file_util.h"
#include "common/logging.h"
#include "common/text.h"
#include "daemon/head/job_metrics.h"

namespace clusterd {

void JobResults::OnStateChanged(TrackedJob& job, JobState from) {
  // The job ended: its package goes, its checkpoints and outputs stay until
  // room is needed.
  if (IsTerminal(job.info.state())) data_->Ended(job.info);
}

std::string JobResults::KeepOutputs(TrackedJob& job) {
  if (job.info.spec().outputs_size() == 0) return "";
  std::string note;
  if (!job.run.outputs_manifest.empty()) {
    Status held = data_->HoldOutputs(&job.info, job.run.outputs_manifest);
    if (held.ok()) {
      job.info.set_outputs_bytes(job.run.outputs_bytes);
    } else {
      note = "; its outputs could not be kept: " + held.message();
    }
  }
  *job.info.mutable_outputs_missing() = {job.run.outputs_missing.begin(), job.run.outputs_missing.end()};
  if (!job.run.outputs_missing.empty()) {
    note += fmt::format("; rank 0 did not write output{} {}", job.run.outputs_missing.size() == 1 ? "" : "s",
                        fmt::join(job.run.outputs_missing, ", "));
  }
  return note;
}

std::string JobResults::DropLostCheckpoint(TrackedJob& job, const std::string& manifest_id,
                                           const std::string& node_name) {
  std::string name;
  for (const CheckpointRef& stored : job.info.stored_checkpoints()) {
    if (stored.manifest_id() == manifest_id) name = stored.name();
  }
  if (!name.empty()) {
    Status dropped = data_->DropLostCheckpoint(&job.info, manifest_id);
    if (!dropped.ok()) {
      LOG_WARN("job {}: node {} could not restore checkpoint {}; it stays stored: {}", job.info.job_id(), node_name,
               name, dropped.message());
      return "";
    }
    table_->Persist(job);
  } else {
    // Gone already: the store dropped its bad piece and said so
    // (OnDataReleased), or another node of the attempt did.
    name = CurrentAttempt(job.info).restored_checkpoint();
    if (name.empty()) return "";
  }
  const auto& stored = job.info.stored_checkpoints();
  std::string next = stored.empty() ? "a retry starts without one"
                                    : fmt::format("a retry restores {}", stored.rbegin()->name());
  std::string note = fmt::format("; {} is gone from the store and no longer offered ({}; this failure does not count "
                                 "against max_failures)", name, next);
  LOG_WARN("job {}: node {} could not restore checkpoint {}, which the store lacks: dropped ({})", job.info.job_id(),
           node_name, name, next);
  return note;
}

bool JobResults::TakesCheckpoint(const TrackedJob& job, const std::string& node_id, int attempt) const {
  if (IsCurrent(job, job.info.job_id(), attempt)) return SpeaksForRank(job, *nodes_, node_id, 0);
  // A node cut off and still running an old attempt must not replace what a
  // later attempt stored.
  if (job.info.attempts_size() == 0 || attempt > CurrentAttempt(job.info).attempt()) return false;
  // An ended job still takes its last attempt's: rank 0 reported it and
  // exited (a training loop's last epoch) while its node uploaded it.
  if (IsTerminal(job.info.state()) && attempt != CurrentAttempt(job.info).attempt()) return false;
  for (const CheckpointRef& stored : job.info.stored_checkpoints()) {
    if (stored.attempt() > attempt) return false;
  }
  for (const AttemptInfo& a : job.info.attempts()) {
    if (a.attempt() == attempt) return a.ranks_size() > 0 && a.ranks(0).rank() == 0 && a.ranks(0).node_id() == node_id;
  }
  return false;
}

std::string JobResults::NodeNameOf(const TrackedJob& job, int attempt) {
  for (const AttemptInfo& a : job.info.attempts()) {
    if (a.attempt() == attempt && a.ranks_size() > 0) return a.ranks(0).node_name();
  }
  return "";
}

void JobResults::Refused(TrackedJob& job, const CheckpointStored& message, const std::string& why) {
  job.info.set_checkpoint_refused(why);
  job.info.set_checkpoint_refused_attempt(message.attempt());
  job.info.set_checkpoint_refused_epoch(message.epoch());
  LOG_WARN("job {}: {}", job.info.job_id(), why);
  table_->Persist(job);
}

void JobResults::OnResultsPending(const std::string& node_id, const ResultsPending& message) {
  TrackedJob* job = table_->Find(message.job_id());
  if (!job || job->info.state() != RUNNING || !IsCurrent(*job, message.job_id(), message.attempt()) ||
      !SpeaksForRank(*job, *nodes_, node_id, 0)) {
    return;
  }
  const std::string sent =
      message.total_bytes() > 0
          ? fmt::format("{} of {}", HumanBytes(std::max<int64_t>(0, message.done_bytes())), HumanBytes(message.total_bytes()))
          : "reading it";
  job->info.set_reason(fmt::format("finishing: rank 0 exited 0; storing {}, the checkpoint it reported last ({})",
                                   message.checkpoint(), sent));
}

TrackedJob* JobResults::OnCheckpointStored(const std::string& node_id, const CheckpointStored& message) {
  TrackedJob* job = table_->Find(message.job_id());
  if (!job || !TakesCheckpoint(*job, node_id, message.attempt())) {
    LOG_WARN("refused checkpoint {} of job {} attempt {} from node {}: not from the rank 0 of an attempt whose "
             "checkpoints are still wanted",
             message.name(), message.job_id(), message.attempt(), node_id);
    return nullptr;
  }
  // The live (or just ended) attempt's: its node is done with this one.
  if (message.attempt() == CurrentAttempt(job->info).attempt()) job->run.checkpoint_settled = message.name();
  if (!message.error().empty() || message.manifest_id().empty()) {
    const std::string why = message.error().empty() ? "the node stored no manifest" : message.error();
    Refused(*job, message, fmt::format("{} (epoch {}, attempt {}) was not stored by node {}: {}", message.name(),
                                       message.epoch(), message.attempt(), NodeNameOf(*job, message.attempt()), why));
    return job;
  }
  CheckpointRef checkpoint;
  checkpoint.set_manifest_id(message.manifest_id());
  checkpoint.set_name(message.name());
  checkpoint.set_epoch(message.epoch());
  checkpoint.set_bytes(message.bytes());
  checkpoint.set_attempt(message.attempt());
  checkpoint.set_node_name(NodeNameOf(*job, message.attempt()));
  checkpoint.set_unix_ms(clock_->UnixMillis());
  int keep = job->info.spec().has_checkpoint() ? job->info.spec().checkpoint().keep() : 2;
  Status added = data_->AddCheckpoint(&job->info, checkpoint, keep);
  if (!added.ok()) {
    // On the record, not only in the head's log: else `fetch --checkpoint`
    // would tell the user it might still be under way.
    Refused(*job, message, fmt::format("{} (epoch {}, {} bytes, attempt {}) was uploaded but not kept: {}",
                                       message.name(), message.epoch(), message.bytes(), message.attempt(),
                                       added.message()));
    return job;
  }
  // An older attempt's checkpoint, stored late (its node had been cut off),
  // must not clear what was said of a newer one.
  const std::pair<int, int64_t> refused = {job->info.checkpoint_refused_attempt(),
                                           job->info.checkpoint_refused_epoch()};
  if (std::make_pair(message.attempt(), message.epoch()) >= refused) {
    job->info.clear_checkpoint_refused();
    job->info.clear_checkpoint_refused_attempt();
    job->info.clear_checkpoint_refused_epoch();
  }
  LOG_INFO("job {}: stored {} (epoch {}, {} bytes, {} sent) from node {}", job->info.job_id(), message.name(),
           message.epoch(), message.bytes(), message.sent_bytes(), checkpoint.node_name());
  table_->Persist(*job);
  return job;
}

void JobResults::OnMetrics(const std::string& node_id, const MetricsReport& message) {
  TrackedJob* job = table_->Find(message.job_id());
  if (!job) return;
  if (!IsCurrent(*job, message.job_id(), message.attempt()) || !SpeaksForRank(*job, *nodes_, node_id, message.rank())) {
    LOG_WARN("refused a report for job {} attempt {} rank {} from node {}: not a rank it runs now", message.job_id(),
             message.attempt(), message.rank(), node_id);
    return;
  }
  // The tally answers what a walk over the job's records would (its
  // attempt's count, each rank's last report number): a report costs the
  // same however many came before it.
  MetricTally& tally = job->metric_tally;
  if (!tally.built) tally.Build(job->metrics);
  tally.StartAttempt(message.attempt());
  // A report its agent sent again, because this head (or the one before a
  // restart) took it but died before confirming it: its number is not past
  // the last one taken from that rank in that attempt.
  if (tally.IsRepeated(message.attempt(), message.rank(), message.report_seq())) return;
  MetricRecord record;
  record.set_attempt(message.attempt());
  record.set_rank(message.rank());
  record.set_index(tally.attempt_reports);
  record.set_unix_ms(message.unix_ms() ? message.unix_ms() : clock_->UnixMillis());
  // Sweeps replay their trials' reports in the order the head took them;
  // the ranks' clocks are other machines' and may disagree by minutes.
  record.set_received_seq(++metric_seq_);
  *record.mutable_values() = message.values();
  record.set_checkpoint(message.checkpoint());
  record.set_report_seq(message.report_seq());
  const int64_t bytes = static_cast<int64_t>(record.ByteSizeLong());
  // Room is made before the record goes in, so that what is dropped was
  // there before this report: a sweep has looked at all of it.
  const size_t dropped = ThinMetrics(&job->metrics, &tally, bytes, config_.job_metrics_max_records,
                                     config_.job_metrics_max_mb << 20);
  if (dropped > 0) {
    LOG_INFO("job {}: kept {} of its {} metric reports: {} older ones dropped, every 2nd at a time, to stay within "
             "job_metrics_max_records ({}) and job_metrics_max_mb ({}); each rank's latest report is kept",
             job->info.job_id(), job->metrics.size() + 1, tally.taken + 1, dropped, config_.job_metrics_max_records,
             config_.job_metrics_max_mb);
  }
  tally.Appended(record, bytes);
  job->metrics.push_back(record);
  table_->journal().AddMetric(job->info.job_id(), record);
  if (!message.checkpoint().empty()) {
    job->info.set_latest_checkpoint(message.checkpoint());
    // Only rank 0's are stored by its node (daemon/agent/rank_zero_results.h).
    if (message.rank() == 0) job->run.checkpoint_reported = BaseName(message.checkpoint());
  }
}

int64_t JobResults::MetricsAppended(const std::string& job_id) const {
  const TrackedJob* job = table_->Find(job_id);
  if (!job) return 0;
  return job->metric_tally.built ? job->metric_tally.appended : static_cast<int64_t>(job->metrics.size());
}

void JobResults::OnDataReleased(const std::string& owner, const std::string& why) {
  TrackedJob* job = table_->Find(JobData::JobOfOwner(owner));
  if (!job || JobData::IsPackageOwner(owner)) return;
  bool outputs = owner.size() > 8 && owner.compare(owner.size() - 8, 8, "/outputs") == 0;
  std::string what = outputs ? "its outputs" : "a stored checkpoint";
  const std::time_t at = static_cast<std::time_t>(clock_->UnixMillis() / 1000);
  job->info.set_data_released(
      why.empty()
          ? fmt::format("the head's store evicted {} at {:%Y-%m-%d %H:%M:%S} UTC to make room", what, fmt::gmtime(at))
          : fmt::format("the head's store lost {} at {:%Y-%m-%d %H:%M:%S} UTC: a piece of it was dropped, as {}", what,
                        fmt::gmtime(at), why));
  if (outputs) job->info.clear_outputs_manifest();
  auto* stored = job->info.mutable_stored_checkpoints();
  for (int i = stored->size() - 1; i >= 0; --i) {
    if (owner == job->info.job_id() + "/checkpoint/" + stored->Get(i).manifest_id()) stored->DeleteSubrange(i, 1);
  }
  LOG_INFO("job {}: {}", job->info.job_id(), job->info.data_released());
  table_->Persist(*job);
}

}  // namespace clusterd
