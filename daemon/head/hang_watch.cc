#include "daemon/head/hang_watch.h"

#include <algorithm>
#include <cmath>
#include <string_view>

#include <fmt/format.h>

#include "common/logging.h"

namespace clusterd {

namespace {

// Ranks named in a reason at most; the diagnosis holds them all.
constexpr size_t kRanksInReason = 8;

// The end of `text`, at most `max` bytes, from a line's start where one is near.
std::string LastPart(const std::string& text, size_t max) {
  if (text.size() <= max) return text;
  std::string part = text.substr(text.size() - max);
  size_t line = part.find('\n');
  if (line != std::string::npos && line + 1 < part.size()) part = part.substr(line + 1);
  return "...\n" + part;
}

std::string FirstPart(const std::string& text, size_t max) {
  if (text.size() <= max) return text;
  return text.substr(0, max) + "\n...";
}

std::string Indented(const std::string& text) {
  std::string out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    out += "  " + text.substr(start, end - start) + "\n";
    start = end + 1;
  }
  return out;
}

}  // namespace

std::string FormatHangDiagnosis(const std::vector<std::pair<std::string, RankDiagnosis>>& diagnoses,
                                size_t max_bytes) {
  if (diagnoses.empty()) return "";
  const size_t share = std::max<size_t>(256, max_bytes / diagnoses.size());
  std::string out;
  for (const auto& [node, diagnosis] : diagnoses) {
    std::string header = fmt::format("rank {} on {}, pid {}: waits in {}{}\n", diagnosis.rank(), node,
                                     diagnosis.pid(), diagnosis.wait_channel(),
                                     diagnosis.python_processes() > 0
                                         ? fmt::format("; SIGQUIT to {} Python process{}",
                                                       diagnosis.python_processes(),
                                                       diagnosis.python_processes() == 1 ? "" : "es")
                                         : "");
    header = FirstPart(header, share / 4);
    constexpr std::string_view kStackLabel = "kernel stack:\n", kTailLabel = "last lines:\n";
    const size_t labels = header.size() + kStackLabel.size() + kTailLabel.size();
    const size_t left = share > labels ? share - labels : 0;
    // The last lines (a Python stack, the last thing it printed) matter most.
    const std::string tail =
        LastPart(Indented(diagnosis.log_tail().empty() ? "(none)" : diagnosis.log_tail()), left * 3 / 4);
    const std::string stack = FirstPart(Indented(diagnosis.kernel_stack()), left - std::min(left, tail.size()));
    out += header;
    out.append(kStackLabel);
    out += stack;
    if (!out.empty() && out.back() != '\n') out += '\n';
    out.append(kTailLabel);
    out += tail;
  }
  return out;
}

std::string SummarizeWaits(const std::vector<std::pair<std::string, RankDiagnosis>>& diagnoses) {
  std::vector<std::string> parts;
  for (const auto& [node, diagnosis] : diagnoses) {
    if (parts.size() == kRanksInReason) {
      parts.push_back(fmt::format("{} more ranks", diagnoses.size() - kRanksInReason));
      break;
    }
    parts.push_back(fmt::format("rank {} waits in {}", diagnosis.rank(), diagnosis.wait_channel()));
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

std::string HangWatch::NodeName(const std::string& node_id) const {
  const NodeInfo* node = nodes_->Find(node_id);
  return node ? node->name() : node_id;
}

void HangWatch::OnRankActivity(const std::string& node_id, const RankActivity& message) {
  TrackedJob* job = table_->Find(message.job_id());
  if (!job || !job->active || !IsCurrent(*job, message.job_id(), message.attempt())) return;
  if (!RunsRank(*job, node_id, message.rank()) || job->info.spec().hang_timeout_s() <= 0) return;
  auto it = watched_.find(message.job_id());
  if (it != watched_.end() && it->second.attempt != message.attempt()) {
    if (it->second.diagnosing) return;  // the old attempt's diagnosis ends first
    watched_.erase(it);
    it = watched_.end();
  }
  if (it == watched_.end()) {
    if (!message.idle()) return;  // a rank nobody was told idle of is active anyway
    it = watched_.emplace(message.job_id(), Watched{}).first;
    it->second.attempt = message.attempt();
  }
  Watched& watched = it->second;
  if (watched.diagnosing) return;
  if (message.idle()) {
    const Micros idle_for = std::max<int64_t>(0, message.idle_for_ms()) * 1000;
    watched.gang.OnIdle(message.rank(), clock_->NowMicros() - idle_for);
  } else {
    watched.gang.OnActive(message.rank());
  }
}

void HangWatch::Tick(Micros now, NextWake* wake) {
  for (auto it = watched_.begin(); it != watched_.end();) {
    const std::string& job_id = it->first;
    Watched& watched = it->second;
    TrackedJob* job = table_->Find(job_id);
    if (watched.diagnosing) {
      if (now >= watched.answers_due) {
        FinishDiagnosis(job_id, watched);
        it = watched_.erase(it);
      } else {
        wake->Want(watched.answers_due);
        ++it;
      }
      continue;
    }
    // Its attempt ended some other way: nothing left to watch.
    if (!job || !job->active || job->info.attempts_size() == 0 ||
        CurrentAttempt(job->info).attempt() != watched.attempt || job->run.ending != AttemptEnding::kNone) {
      it = watched_.erase(it);
      continue;
    }
    const double timeout_s = std::min(job->info.spec().hang_timeout_s(), kMaxHangTimeoutS);
    const Micros timeout = static_cast<Micros>(timeout_s * 1e6);
    std::optional<Micros> hung_at =
        job->run.adopting ? std::nullopt
                          : watched.gang.HungAt(static_cast<int>(job->run.slots.size()), job->run.exited, timeout);
    if (hung_at && now >= *hung_at) {
      StartDiagnosis(*job, watched, *hung_at - timeout, now);
      if (watched.awaited.empty()) {
        FinishDiagnosis(job_id, watched);
        it = watched_.erase(it);
        continue;
      }
      wake->Want(watched.answers_due);
    } else if (hung_at) {
      wake->Want(*hung_at);
    }
    ++it;
  }
}

void HangWatch::StartDiagnosis(TrackedJob& job, Watched& watched, Micros quiet_since, Micros now) {
  watched.diagnosing = true;
  const double quiet_s = static_cast<double>(now - quiet_since) / 1e6;
  watched.reason = fmt::format("attempt {} hung: no rank printed, reported or used CPU for {:.0f} s (hang_timeout_s {:g})",
                               watched.attempt, std::floor(quiet_s), job.info.spec().hang_timeout_s());
  // Decided now, so that a rank that dies of its SIGQUIT (a Python program
  // without the clusterd package) does not become the attempt's reason.
  attempts_->EndWhenDown(job, AttemptEnding::kFail, watched.reason);
  const int64_t wait_ms = std::max(0, config_.hang_diagnosis_wait_ms);
  std::set<std::string> nodes;
  for (size_t rank = 0; rank < job.run.slots.size(); ++rank) {
    if (!job.run.exited.count(static_cast<int>(rank))) nodes.insert(job.run.slots[rank].node_id);
  }
  for (const std::string& node_id : nodes) {
    HeadMessage message;
    DiagnoseRanks* diagnose = message.mutable_diagnose_ranks();
    diagnose->set_job_id(job.info.job_id());
    diagnose->set_attempt(watched.attempt);
    diagnose->set_wait_ms(wait_ms);
    diagnose->set_tail_lines(std::max(1, config_.log_tail_lines));
    if (send_(node_id, message)) watched.awaited.insert(node_id);
  }
  watched.answers_due = now + wait_ms * 1000 + kAnswerSlack;
}

void HangWatch::OnRanksDiagnosed(const std::string& node_id, const RanksDiagnosed& message) {
  auto it = watched_.find(message.job_id());
  if (it == watched_.end()) return;
  Watched& watched = it->second;
  if (!watched.diagnosing || watched.attempt != message.attempt() || !watched.awaited.erase(node_id)) return;
  for (const RankDiagnosis& diagnosis : message.ranks()) watched.diagnoses.emplace_back(NodeName(node_id), diagnosis);
  if (watched.awaited.empty()) {
    FinishDiagnosis(message.job_id(), watched);
    watched_.erase(it);
  }
}

void HangWatch::FinishDiagnosis(const std::string& job_id, Watched& watched) {
  TrackedJob* job = table_->Find(job_id);
  if (!job) return;
  std::sort(watched.diagnoses.begin(), watched.diagnoses.end(),
            [](const auto& a, const auto& b) { return a.second.rank() < b.second.rank(); });
  std::string reason = watched.reason;
  if (!watched.diagnoses.empty()) reason += "; " + SummarizeWaits(watched.diagnoses);
  std::vector<std::string> silent;
  for (const std::string& node_id : watched.awaited) silent.push_back(NodeName(node_id));
  if (!silent.empty()) reason += fmt::format("; no diagnosis from {}", fmt::join(silent, ", "));
  const std::string diagnosis =
      FormatHangDiagnosis(watched.diagnoses, static_cast<size_t>(std::max(1, config_.hang_diagnosis_kb)) * 1024);
  // The attempt may have ended meanwhile (its ranks died of the SIGQUIT):
  // its record is found by number.
  for (AttemptInfo& attempt : *job->info.mutable_attempts()) {
    if (attempt.attempt() != watched.attempt) continue;
    attempt.set_hang_diagnosis(diagnosis);
    if (attempt.failure_reason() == watched.reason) attempt.set_failure_reason(reason);
  }
  LOG_WARN("job {}: {}", job_id, reason);
  const bool current = job->active && CurrentAttempt(job->info).attempt() == watched.attempt;
  if (current && job->run.ending_reason == watched.reason) job->run.ending_reason = reason;
  if (current && job->run.ranks_left_running) {
    attempts_->KillRemaining(*job);  // journals the attempt's end, and with it the diagnosis
  } else {
    table_->Persist(*job);
  }
}

}  // namespace clusterd
