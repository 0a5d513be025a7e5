#include "cli/job_printer.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <map>
#include <set>

#include <fmt/format.h>

#include "common/logs/attempt_banner.h"
#include "common/job_state.h"
#include "common/resources.h"
#include "common/text.h"

namespace clusterd::cli {

namespace {

const char* SignalName(int signal) {
  switch (signal) {
    case 1: return "SIGHUP";
    case 2: return "SIGINT";
    case 3: return "SIGQUIT";
    case 4: return "SIGILL";
    case 5: return "SIGTRAP";
    case 6: return "SIGABRT";
    case 7: return "SIGBUS";
    case 8: return "SIGFPE";
    case 9: return "SIGKILL";
    case 10: return "SIGUSR1";
    case 11: return "SIGSEGV";
    case 12: return "SIGUSR2";
    case 13: return "SIGPIPE";
    case 14: return "SIGALRM";
    case 15: return "SIGTERM";
    default: return nullptr;
  }
}

std::string Indent(const std::string& text, const std::string& margin) {
  std::string out;
  size_t start = 0;
  for (size_t nl; (nl = text.find('\n', start)) != std::string::npos; start = nl + 1) {
    out += margin + text.substr(start, nl - start + 1);
  }
  return out;
}

std::vector<const MetricRecord*> RankZeroRecords(const MetricsReply& reply) {
  std::vector<const MetricRecord*> records;
  for (const auto& record : reply.records()) {
    if (record.rank() == 0) records.push_back(&record);
  }
  std::stable_sort(records.begin(), records.end(), [](const MetricRecord* a, const MetricRecord* b) {
    return a->attempt() != b->attempt() ? a->attempt() < b->attempt() : a->index() < b->index();
  });
  return records;
}

std::vector<std::string> MetricNames(const std::vector<const MetricRecord*>& records) {
  std::set<std::string> names;
  for (const auto* record : records) {
    for (const auto& [name, value] : record->values()) names.insert(name);
  }
  return {names.begin(), names.end()};
}

}  // namespace

std::string JobStateText(JobState state) { return JobStateName(state); }

bool IsFinalState(JobState state) { return IsTerminal(state); }

std::string FormatLocalTime(int64_t unix_ms) {
  if (unix_ms <= 0) return "-";
  std::time_t secs = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  localtime_r(&secs, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S", &tm);
  return stamp;
}

std::string FormatDuration(int64_t ms) {
  if (ms < 0) return "-";
  if (ms < 1000) return fmt::format("{}ms", ms);
  int64_t s = ms / 1000;
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m{:02d}s", s / 60, s % 60);
  if (s < 86400) return fmt::format("{}h{:02d}m", s / 3600, s % 3600 / 60);
  return fmt::format("{}d{:02d}h", s / 86400, s % 86400 / 3600);
}

int AttemptCount(const JobInfo& job) { return job.older_attempts().count() + job.attempts_size(); }

std::string JobDuration(const JobInfo& job, int64_t now_unix_ms) {
  int64_t start = job.older_attempts().count() > 0 ? job.older_attempts().first_start_unix_ms()
                  : job.attempts_size() > 0       ? job.attempts(0).start_unix_ms()
                                                  : 0;
  if (start <= 0) return "-";
  int64_t end = job.end_unix_ms() > 0 ? job.end_unix_ms() : now_unix_ms;
  return FormatDuration(end - start);
}

std::string FormatEntrypoint(const JobSpec& spec) {
  const auto& argv = spec.entrypoint();
  if (argv.size() == 3 && argv[0] == "/bin/sh" && argv[1] == "-c") return argv[2];
  std::string out;
  for (const auto& arg : argv) out += (out.empty() ? "" : " ") + ShellWord(arg);
  return out;
}

std::string FormatSpecSummary(const JobSpec& spec) {
  return fmt::format("{}, {} worker{} x {{{}}}, {}, max_failures {}", spec.name(), spec.num_workers(),
                     spec.num_workers() == 1 ? "" : "s", FormatResources(spec.resources_per_worker()),
                     Placement_Name(spec.placement()), spec.max_failures());
}

std::string HangingIndent(const std::string& text, size_t margin) {
  std::string trimmed = text;
  while (!trimmed.empty() && (trimmed.back() == '\n' || trimmed.back() == ' ')) trimmed.pop_back();
  std::string out;
  for (char c : trimmed) out += c == '\n' ? "\n" + std::string(margin, ' ') : std::string(1, c);
  return out;
}

std::string Truncate(const std::string& text, size_t max_chars) {
  std::string flat = text;
  while (!flat.empty() && (flat.back() == '\n' || flat.back() == ' ')) flat.pop_back();
  std::replace(flat.begin(), flat.end(), '\n', ' ');
  if (flat.size() <= max_chars) return flat;
  size_t keep = max_chars < 3 ? 0 : max_chars - 3;
  while (keep > 0 && (static_cast<unsigned char>(flat[keep]) & 0xC0) == 0x80) --keep;
  return flat.substr(0, keep) + "...";
}

// Rows of cells, left-aligned in columns two spaces apart; the last column
// is not padded, so lines carry no trailing blanks.
std::string FormatTable(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const auto& row : rows) {
    if (width.size() < row.size()) width.resize(row.size(), 0);
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(width[i] - row[i].size() + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

std::map<JobState, int> CountStates(const std::vector<const JobInfo*>& members) {
  std::map<JobState, int> by_state;
  for (const JobInfo* job : members) ++by_state[job->state()];
  return by_state;
}

std::map<JobState, int> CountStates(const ArrayStates& counted) {
  std::map<JobState, int> by_state;
  for (const JobStateCount& entry : counted.counts()) by_state[entry.state()] += entry.count();
  return by_state;
}

std::string FormatArrayStates(const std::map<JobState, int>& by_state, int count) {
  std::string out;
  int listed = 0;
  for (const auto& [state, n] : by_state) {
    out += fmt::format("{}{} {}", out.empty() ? "" : ", ", n, JobStateText(state));
    listed += n;
  }
  if (listed < count) out += fmt::format(" (of the {} listed; clusterctl jobs --array ID lists them all)", listed);
  return out;
}

namespace {
// Whose a job is; a record from before jobs had owners is the admin's.
std::string OwnerShown(const std::string& owner) { return owner.empty() ? "admin" : owner; }
}  // namespace

std::string FormatJobsTable(const std::vector<JobInfo>& jobs, int64_t now_unix_ms,
                            const std::vector<ArrayStates>& counted) {
  if (jobs.empty()) return "No jobs.\n";
  std::vector<std::vector<std::string>> rows = {
      {"ID", "NAME", "OWNER", "STATE", "ATTEMPT", "WORKERS", "SUBMITTED", "DURATION", "REASON"}};
  // A sweep's trials sit under one row of their sweep, where its first trial
  // was; an array is one row with its jobs counted by state.
  std::vector<const JobInfo*> ordered;
  std::map<std::string, std::vector<const JobInfo*>> trials;
  std::map<std::string, std::vector<const JobInfo*>> arrays;
  for (const auto& job : jobs) {
    const std::string& sweep = job.spec().sweep_id();
    const std::string& array = job.spec().array_id();
    if (!array.empty()) {
      if (arrays.count(array) == 0) ordered.push_back(&job);
      arrays[array].push_back(&job);
      continue;
    }
    if (sweep.empty() || trials.count(sweep) == 0) ordered.push_back(&job);
    if (!sweep.empty()) trials[sweep].push_back(&job);
  }
  for (const JobInfo* row : ordered) {
    const JobInfo& first = *row;
    if (!first.spec().array_id().empty()) {
      const std::string& array_id = first.spec().array_id();
      auto by_head = std::find_if(counted.begin(), counted.end(),
                                  [&](const ArrayStates& states) { return states.array_id() == array_id; });
      const std::map<JobState, int> by_state =
          by_head != counted.end() ? CountStates(*by_head) : CountStates(arrays[array_id]);
      rows.push_back({array_id, Truncate(first.spec().name(), 32), OwnerShown(first.owner()), "ARRAY",
                      fmt::format("{} jobs", first.spec().array().count()), std::to_string(first.spec().num_workers()),
                      FormatLocalTime(first.submit_unix_ms()), "", FormatArrayStates(by_state, first.spec().array().count())});
      continue;
    }
    const bool sweep = !first.spec().sweep_id().empty();
    if (sweep) {
      std::string name = first.spec().name();
      name = name.substr(0, name.rfind("-trial-"));
      rows.push_back({first.spec().sweep_id(), Truncate(name, 32), OwnerShown(first.owner()), "SWEEP",
                      fmt::format("{} trials", trials[first.spec().sweep_id()].size()), "", "", "", ""});
    }
    for (const JobInfo* member : sweep ? trials[first.spec().sweep_id()] : std::vector<const JobInfo*>{row}) {
    const JobInfo& job = *member;
    rows.push_back({(sweep ? "  " : "") + job.job_id(), Truncate(job.spec().name(), 32), OwnerShown(job.owner()),
                    JobStateText(job.state()),
                    fmt::format("{}/{}", AttemptCount(job),
                                job.spec().max_failures() + 1 + job.uncounted_failures() + job.preemptions()),
                    std::to_string(job.spec().num_workers()), FormatLocalTime(job.submit_unix_ms()),
                    JobDuration(job, now_unix_ms), Truncate(job.reason(), 60)});
    }
  }
  return FormatTable(rows);
}

std::string FormatRankExit(const RankInfo& rank, bool attempt_ended) {
  if (!rank.exited()) return attempt_ended ? "lost" : "running";
  if (rank.signal() > 0) {
    const char* name = SignalName(rank.signal());
    return name ? fmt::format("signal {} ({})", rank.signal(), name) : fmt::format("signal {}", rank.signal());
  }
  return std::to_string(rank.exit_code());
}

namespace {

// Whether and how the job may be preempted, and the notice under way.
std::string FormatPreemption(const JobInfo& job) {
  const JobSpec& spec = job.spec();
  std::string out;
  if (job.has_preempting()) {
    const PreemptionNotice& notice = job.preempting();
    out = fmt::format("being preempted by {}: SIGTERM at {}, SIGKILL {:g} s later", notice.by_job(),
                      FormatLocalTime(notice.deadline_unix_ms()), notice.grace_ms() / 1000.0);
  }
  std::string rules;
  if (spec.not_preemptible()) rules = "not preemptible (preemptible: false)";
  if (!spec.not_preemptible() && spec.has_max_preemptions()) {
    rules = job.preemptions() >= spec.max_preemptions()
                ? fmt::format("no longer preemptible (max_preemptions {} reached)", spec.max_preemptions())
                : fmt::format("max_preemptions {}", spec.max_preemptions());
  }
  if (spec.preemption_grace_s() > 0) rules += fmt::format("{}grace {:g} s", rules.empty() ? "" : ", ", spec.preemption_grace_s());
  if (!rules.empty()) out += (out.empty() ? "" : "; ") + rules;
  return out;
}

// "by job-0007 at 10:42:03 (SIGTERM at 10:42:04); resumed from checkpoint_000003 in attempt 2"
std::string FormatPreemptedAttempt(const JobInfo& job, const AttemptInfo& attempt) {
  std::string out = fmt::format("by {} at {} (SIGTERM at {})", attempt.preempted_by(),
                                FormatLocalTime(attempt.preempt_notice_unix_ms()),
                                FormatLocalTime(attempt.preempt_deadline_unix_ms()));
  for (const AttemptInfo& next : job.attempts()) {
    if (next.attempt() != attempt.attempt() + 1) continue;
    out += next.restored_checkpoint().empty()
               ? fmt::format("; attempt {} started over (no checkpoint stored)", next.attempt())
               : fmt::format("; resumed from {} in attempt {}", next.restored_checkpoint(), next.attempt());
  }
  return out;
}

}  // namespace

std::string FormatJobDetail(const JobInfo& job, int64_t now_unix_ms) {
  const JobSpec& spec = job.spec();
  std::string out = fmt::format("Job {} ({}): {}\n", job.job_id(), spec.name(), JobStateText(job.state()));
  auto field = [&out](const std::string& name, const std::string& value) {
    out += fmt::format("  {:<14}{}\n", name + ":", HangingIndent(value, 16));
  };
  if (!job.reason().empty()) field("reason", job.reason());
  field("attempts", fmt::format("{} of {} (max_failures {}{}{})", AttemptCount(job),
                                spec.max_failures() + 1 + job.uncounted_failures() + job.preemptions(),
                                spec.max_failures(),
                                job.uncounted_failures() > 0
                                    ? fmt::format("; {} failed not by the job's fault, not counted", job.uncounted_failures())
                                    : "",
                                job.preemptions() > 0 ? fmt::format("; {} preempted, not counted", job.preemptions()) : ""));
  const std::string preemption = FormatPreemption(job);
  if (!preemption.empty()) field("preemption", preemption);
  if (job.state() == RESTARTING && job.retry_at_unix_ms() > 0) field("next attempt", FormatLocalTime(job.retry_at_unix_ms()));
  field("owner", OwnerShown(job.owner()));
  field("submitted", FormatLocalTime(job.submit_unix_ms()));
  if (job.end_unix_ms() > 0) field("ended", FormatLocalTime(job.end_unix_ms()));
  field("duration", JobDuration(job, now_unix_ms));
  field("entrypoint", FormatEntrypoint(spec));
  if (!spec.working_dir().empty()) field("working dir", spec.working_dir());
  field("workers", fmt::format("{} x {{{}}}, {}", spec.num_workers(), FormatResources(spec.resources_per_worker()),
                               Placement_Name(spec.placement())));
  if (spec.timeout_s() > 0) field("timeout", fmt::format("{:g}s", spec.timeout_s()));
  if (spec.hang_timeout_s() > 0) field("hang timeout", fmt::format("{:g}s", spec.hang_timeout_s()));
  std::string checkpoint = job.latest_checkpoint().empty() ? "none yet" : job.latest_checkpoint();
  if (!spec.checkpoint().dir().empty() || spec.checkpoint().keep() > 0) {
    checkpoint += fmt::format(" (dir {}, keep {})", spec.checkpoint().dir().empty() ? "checkpoints/<job id>" : spec.checkpoint().dir(),
                              spec.checkpoint().keep());
  }
  if (spec.checkpoint().has_upload_bytes_per_s()) {
    const int64_t rate = spec.checkpoint().upload_bytes_per_s();
    checkpoint += rate == 0 ? ", uploaded at full speed"
                            : fmt::format(", uploaded at {}/s at most", HumanBytes(static_cast<uint64_t>(rate)));
  }
  field("checkpoint", checkpoint);
  if (job.stored_checkpoints_size() > 0) {
    const CheckpointRef& newest = *job.stored_checkpoints().rbegin();
    field("stored", fmt::format("{} (epoch {}, {}, attempt {} on {}, {}){}", newest.name(), newest.epoch(),
                                HumanBytes(static_cast<uint64_t>(newest.bytes())), newest.attempt(), newest.node_name(),
                                FormatLocalTime(newest.unix_ms()),
                                job.stored_checkpoints_size() > 1
                                    ? fmt::format("; {} kept", job.stored_checkpoints_size())
                                    : ""));
  }
  if (!job.checkpoint_refused().empty()) field("not kept", job.checkpoint_refused());
  if (spec.outputs_size() > 0) {
    std::string outputs;
    for (const auto& path : spec.outputs()) outputs += (outputs.empty() ? "" : " ") + path;
    if (!job.outputs_manifest().empty()) outputs += fmt::format(" (stored, {})", HumanBytes(static_cast<uint64_t>(job.outputs_bytes())));
    field("outputs", outputs);
  }
  if (!job.data_released().empty()) field("released", job.data_released());
  if (!job.logs_released().empty()) field("logs", job.logs_released());
  if (!spec.dvclive_dir().empty()) field("dvclive", spec.dvclive_dir());
  if (!spec.env().empty()) {
    std::map<std::string, std::string> env(spec.env().begin(), spec.env().end());
    std::string text;
    for (const auto& [name, value] : env) text += (text.empty() ? "" : " ") + name + "=" + ShellWord(value);
    field("env", text);
  }
  if (!spec.env_passthrough().empty()) {
    std::string patterns;
    for (const auto& p : spec.env_passthrough()) patterns += (patterns.empty() ? "" : " ") + p;
    std::set<std::string> names;
    for (const auto& [name, value] : job.passthrough_env()) names.insert(name);
    std::string passed;
    for (const auto& name : names) passed += (passed.empty() ? "" : " ") + name;
    field("passthrough", fmt::format("{} -> {}", patterns, names.empty() ? "(none matched)" : passed));
  }
  if (!spec.config_json().empty()) field("config", spec.config_json());
  if (!spec.source_file().empty()) field("job file", spec.source_file());

  const AttemptsSummary& older = job.older_attempts();
  if (older.count() > 0) {
    out += fmt::format("\nAttempts 0..{}: not kept in full (the head keeps the newest {}); {} of them failed\n",
                       older.count() - 1, job.attempts_size(), older.failed());
    if (older.failed() > 0) {
      out += fmt::format("  first failure (attempt {}): {}\n", older.first_failed_attempt(),
                         HangingIndent(older.first_failure_reason(), 4));
    }
    if (older.failed() > 1) {
      out += fmt::format("  last failure (attempt {}): {}\n", older.last_failed_attempt(),
                         HangingIndent(older.last_failure_reason(), 4));
    }
  }
  for (const auto& attempt : job.attempts()) {
    bool ended = attempt.end_unix_ms() > 0;
    int64_t end = ended ? attempt.end_unix_ms() : now_unix_ms;
    out += fmt::format("\nAttempt {}: started {}, {} {}", attempt.attempt(), FormatLocalTime(attempt.start_unix_ms()),
                       ended ? "ended " + FormatLocalTime(attempt.end_unix_ms()) + "," : "running for",
                       attempt.start_unix_ms() > 0 ? FormatDuration(end - attempt.start_unix_ms()) : "-");
    if (!ended) out += " so far";
    out += "\n";
    if (!attempt.master_addr().empty()) {
      out += fmt::format("  master: {}:{}\n", attempt.master_addr(),
                         attempt.master_port() > 0 ? std::to_string(attempt.master_port()) : "?");
    }
    if (!attempt.restored_checkpoint().empty()) out += fmt::format("  resumed from: {}\n", attempt.restored_checkpoint());
    if (!attempt.failure_reason().empty()) out += fmt::format("  failure: {}\n", HangingIndent(attempt.failure_reason(), 4));
    if (!attempt.preempted_by().empty()) out += fmt::format("  preempted: {}\n", FormatPreemptedAttempt(job, attempt));
    if (!attempt.hang_diagnosis().empty()) {
      out += "  hang diagnosis:\n";
      std::string diagnosis = attempt.hang_diagnosis();
      if (diagnosis.back() != '\n') diagnosis += '\n';
      for (size_t start = 0; start < diagnosis.size();) {
        size_t end = diagnosis.find('\n', start);
        out += "    " + diagnosis.substr(start, end - start) + "\n";
        start = end + 1;
      }
    }
    std::vector<std::vector<std::string>> rows = {{"RANK", "NODE", "LOCAL_RANK", "NODE_RANK", "GPUS", "PID", "EXIT"}};
    for (const auto& rank : attempt.ranks()) {
      std::string gpus;
      for (int gpu : rank.gpus()) gpus += (gpus.empty() ? "" : ",") + std::to_string(gpu);
      rows.push_back({std::to_string(rank.rank()),
                      rank.node_name().empty() ? rank.node_id() : rank.node_name(),
                      std::to_string(rank.local_rank()), std::to_string(rank.node_rank()),
                      gpus.empty() ? "-" : gpus, rank.pid() > 0 ? std::to_string(rank.pid()) : "-",
                      FormatRankExit(rank, ended)});
    }
    out += Indent(FormatTable(rows), "  ");
  }
  return out;
}

std::string FormatMetricsTable(const MetricsReply& reply) {
  auto records = RankZeroRecords(reply);
  if (records.empty()) return "No metrics reported by rank 0 yet.\n";
  auto names = MetricNames(records);
  std::vector<std::string> header = {"ATTEMPT", "INDEX", "TIME"};
  header.insert(header.end(), names.begin(), names.end());
  header.push_back("CHECKPOINT");
  std::vector<std::vector<std::string>> rows = {header};
  for (const auto* record : records) {
    std::vector<std::string> row = {std::to_string(record->attempt()), std::to_string(record->index()),
                                    FormatLocalTime(record->unix_ms())};
    for (const auto& name : names) {
      auto it = record->values().find(name);
      row.push_back(it == record->values().end() ? "-" : fmt::format("{:.6g}", it->second));
    }
    row.push_back(record->checkpoint().empty() ? "-" : record->checkpoint());
    rows.push_back(std::move(row));
  }
  // A record's index is its report's number in its attempt (every rank's
  // together), so the newest index tells how many reports the attempt made.
  std::map<int, int64_t> reports;
  for (const auto& record : reply.records()) {
    reports[record.attempt()] = std::max(reports[record.attempt()], record.index() + 1);
  }
  int64_t made = 0;
  for (const auto& [attempt, count] : reports) made += count;
  std::string thinned;
  if (reply.records_size() < made) {
    thinned = fmt::format("Kept {} of the job's {} reports: the head thins a job's older reports past "
                          "job_metrics_max_records (every 2nd at a time; INDEX shows which are left).\n",
                          reply.records_size(), made);
  }
  return FormatTable(rows) + thinned;
}

std::string FormatMetricsCsv(const MetricsReply& reply) {
  auto records = RankZeroRecords(reply);
  auto names = MetricNames(records);
  std::string out = "attempt,index,unix_ms";
  for (const auto& name : names) out += "," + CsvField(name);
  out += ",checkpoint\n";
  for (const auto* record : records) {
    out += fmt::format("{},{},{}", record->attempt(), record->index(), record->unix_ms());
    for (const auto& name : names) {
      auto it = record->values().find(name);
      out += ",";
      if (it != record->values().end()) out += fmt::format("{}", it->second);
    }
    out += "," + CsvField(record->checkpoint()) + "\n";
  }
  return out;
}

std::string LogLines::Emit(int rank, const std::string& line) {
  int banner = ParseAttemptBanner(line);
  if (banner >= 0) current_attempt_[rank] = banner;
  if (attempt_ >= 0) {
    auto it = current_attempt_.find(rank);
    if (it == current_attempt_.end() || it->second != attempt_) return "";
  }
  return (prefix_ranks_ ? fmt::format("[rank {}] ", rank) : std::string()) + line + "\n";
}

std::string LogLines::Add(int rank, const std::string& data) {
  std::string& partial = partial_[rank];
  std::string out;
  size_t start = 0;
  for (size_t nl; (nl = data.find('\n', start)) != std::string::npos; start = nl + 1) {
    std::string line = partial + data.substr(start, nl - start);
    partial.clear();
    if (!line.empty() && line.back() == '\r') line.pop_back();
    out += Emit(rank, line);
  }
  partial += data.substr(start);
  // A line that never ends (a progress bar redrawn with '\r') must not
  // grow without bound: past the cap it is shown as it stands.
  if (partial.size() > kMaxPartialLine) {
    out += Emit(rank, partial);
    partial.clear();
  }
  return out;
}

std::string LogLines::Flush() {
  std::string out;
  for (auto& [rank, partial] : partial_) {
    if (!partial.empty()) out += Emit(rank, partial);
    partial.clear();
  }
  return out;
}

}  // namespace clusterd::cli
