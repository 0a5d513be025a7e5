// What clusterctl's job commands print: the jobs table, one job's details,
// the metrics table and CSV, a job file's summary, and the line splitter
// that `logs -f` and `submit --follow` feed chunks of rank output through.
// Pure functions of their inputs (times are passed in), so they are unit
// tested with exact output; local times follow the TZ of the process.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "cluster.pb.h"

namespace clusterd::cli {

// "RUNNING", "SUCCEEDED", ...
std::string JobStateText(JobState state);
// SUCCEEDED, FAILED, STOPPED: the job will not run again.
bool IsFinalState(JobState state);

// "2024-05-01 12:00:00" in local time; "-" for 0.
std::string FormatLocalTime(int64_t unix_ms);
// "850ms", "12s", "3m05s", "2h05m", "1d03h"; "-" for a negative span.
std::string FormatDuration(int64_t ms);
// Attempts the job has run, those the head sums up (older_attempts) included.
int AttemptCount(const JobInfo& job);
// How long the job has run: from its first attempt's start to its end (or
// `now_unix_ms` while it runs); "-" before it first started.
std::string JobDuration(const JobInfo& job, int64_t now_unix_ms);
// The entrypoint as a user wrote it: the shell string of ["/bin/sh", "-c",
// s], else the argv joined with spaces (arguments quoted where needed).
std::string FormatEntrypoint(const JobSpec& spec);
// "linear-regression, 2 workers x {1 CPU}, SPREAD, max_failures 1"
std::string FormatSpecSummary(const JobSpec& spec);
// Multi-line text (a reason quoting a rank's last log lines) under a label:
// trailing newlines dropped, every later line indented by `margin` spaces.
std::string HangingIndent(const std::string& text, size_t margin);
// Cuts `text` to at most `max_chars` bytes, ending in "..." when cut (never
// in the middle of a UTF-8 sequence); newlines become spaces.
std::string Truncate(const std::string& text, size_t max_chars);

// `clusterctl jobs`: ID NAME STATE ATTEMPT WORKERS SUBMITTED DURATION REASON.
// Rows of cells, left-aligned in columns two spaces apart.
std::string FormatTable(const std::vector<std::vector<std::string>>& rows);
// An array is one row: its jobs counted by state from `counted` (the head's
// ListJobs with group_arrays) where that has it, else from those listed.
std::string FormatJobsTable(const std::vector<JobInfo>& jobs, int64_t now_unix_ms,
                            const std::vector<ArrayStates>& counted = {});
// How many of an array's jobs are in each state: of those listed, or as
// the head counted them.
std::map<JobState, int> CountStates(const std::vector<const JobInfo*>& members);
std::map<JobState, int> CountStates(const ArrayStates& counted);
// An array's jobs by state, "2 RUNNING, 8 SUCCEEDED", saying so when fewer
// than its `count` jobs are among them.
std::string FormatArrayStates(const std::map<JobState, int>& by_state, int count);
// `clusterctl job JOB`: state, reason, attempts, times, placement per rank,
// master address, latest checkpoint, entrypoint, config. The values of
// passthrough variables are not shown (they may be secrets), only names.
std::string FormatJobDetail(const JobInfo& job, int64_t now_unix_ms);
// One rank's exit as a person reads it: "0", "1", "signal 9 (SIGKILL)",
// "running", or "lost" (its attempt ended without word of it).
std::string FormatRankExit(const RankInfo& rank, bool attempt_ended);

// `clusterctl metrics`: rank 0's records ordered by (attempt, index), one
// column per metric name (the union, sorted), then the checkpoint; and a
// line saying how many reports were kept when the head thinned them.
std::string FormatMetricsTable(const MetricsReply& reply);
// The same as CSV: header "attempt,index,unix_ms,<names...>,checkpoint",
// values at full precision, an empty field where a record lacks a metric.
std::string FormatMetricsCsv(const MetricsReply& reply);

// Splits chunks of several ranks' output into whole lines, keeping each
// rank's unfinished last line until its end arrives (or Flush). Lines come
// out prefixed "[rank N] " when `prefix_ranks`. With `attempt` >= 0 only the
// lines of that attempt are kept (told apart by the head's banners).
class LogLines {
 public:
  // An unfinished line longer than this is emitted as it stands.
  static constexpr size_t kMaxPartialLine = 64 * 1024;

  explicit LogLines(bool prefix_ranks, int attempt = -1) : prefix_ranks_(prefix_ranks), attempt_(attempt) {}

  // The complete lines `data` finishes for `rank`, each ending in "\n".
  std::string Add(int rank, const std::string& data);
  // Every rank's unfinished line, given a "\n", in rank order; clears them.
  std::string Flush();

 private:
  std::string Emit(int rank, const std::string& line);

  bool prefix_ranks_;
  int attempt_;
  std::map<int, std::string> partial_;   // rank -> text after its last newline
  std::map<int, int> current_attempt_;   // rank -> attempt of the latest banner
};

}  // namespace clusterd::cli
