#include "cli/log_follow.h"

#include <chrono>
#include <csignal>
#include <iostream>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "cli/command_line.h"
#include "cli/head_outage.h"
#include "cli/job_printer.h"
#include "cli/job_results.h"
#include "common/clock.h"
#include "common/job_state.h"
#include "common/text.h"

namespace clusterd::cli {

namespace {

// How often a follow asks for new output. Fixed: it sets how fresh the lines
// are, at one small call a time; waiting for an absent head is follow_outage_ms.
constexpr int kPollMs = 200;

volatile std::sig_atomic_t g_interrupted = 0;

void OnInterrupt(int) { g_interrupted = 1; }

// Ctrl-C while following stops following, not the job: the handler only
// raises a flag the polling loop reads. Restores the old handler on exit.
class InterruptGuard {
 public:
  InterruptGuard() {
    g_interrupted = 0;
    struct sigaction action {};
    action.sa_handler = OnInterrupt;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, &old_);
  }
  ~InterruptGuard() { sigaction(SIGINT, &old_, nullptr); }

 private:
  struct sigaction old_ {};
};

// Sleeps up to `ms`, waking early on Ctrl-C.
void Nap(int ms) {
  for (int slept = 0; slept < ms && !g_interrupted; slept += 20) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace

Result<JobInfo> GetJob(HeadClient& client, const std::string& job_id) {
  JobRequest request;
  request.set_job_id(job_id);
  JobInfo info;
  Status st = client.Call(&HeadService::Stub::GetJob, request, &info);
  if (!st.ok()) return st;
  return info;
}

// Prints a job's logs from the start. Without `follow` it stops when the
// head has nothing more and returns 0. With it, it polls every 200 ms until
// the job has ended (SUCCEEDED, FAILED, STOPPED) and its logs are drained,
// tells on stderr how the state changes, and returns 0 only for SUCCEEDED;
// Ctrl-C stops following (not the job) with 130.
int StreamLogs(HeadClient& client, const FollowOptions& options) {
  InterruptGuard guard;
  std::optional<DvcLiveFollower> dvclive;
  if (options.results) {
    auto job = GetJob(client, options.job_id);
    if (job.ok()) dvclive.emplace(client, *job);
  }
  LogLines lines(options.prefix_ranks, options.attempt);
  std::map<int, int64_t> offsets;
  int next_rank = 0;  // replies are bounded: ranks take turns
  JobState last_state = JOB_STATE_UNSPECIFIED;
  int last_attempts = 0;
  int quiet_after_end = 0;
  bool ever_answered = false;
  bool printed_any = false;
  HeadOutage outage(client.follow_outage_ms());
  while (true) {
    if (g_interrupted) {
      std::cout << lines.Flush() << std::flush;
      std::cerr << fmt::format("clusterctl: stopped following {}; it keeps running (`clusterctl stop {}` stops it)\n",
                               options.job_id, options.job_id);
      return 130;
    }
    LogsRequest request;
    request.set_job_id(options.job_id);
    request.set_rank(options.rank);
    // Attempts are told apart here, by the head's banners, so the offsets
    // always count bytes of the whole per-rank log.
    request.set_attempt(-1);
    for (const auto& [rank, offset] : offsets) (*request.mutable_offsets())[rank] = offset;
    request.set_start_rank(next_rank);
    LogsReply reply;
    Status st = client.Call(&HeadService::Stub::GetLogs, request, &reply);
    if (!st.ok()) {
      if (!options.follow || !ever_answered || !outage.TryAgain(st)) {
        std::cout << lines.Flush() << std::flush;
        return Fail(st);
      }
      client.AwaitHead(500);
      continue;
    }
    ever_answered = true;
    outage.Over();
    next_rank = reply.next_rank();
    bool got = false;
    std::string out;
    for (const auto& chunk : reply.chunks()) {
      if (options.json && !chunk.data().empty()) {
        out += fmt::format("{{\"rank\":{},\"end_offset\":{},\"text\":{}}}\n", chunk.rank(), chunk.end_offset(),
                           JsonQuote(chunk.data()));
      }
      if (!options.json) out += lines.Add(chunk.rank(), chunk.data());
      offsets[chunk.rank()] = chunk.end_offset();
      got = got || !chunk.data().empty();
    }
    printed_any = printed_any || got;
    std::cout << out << std::flush;
    if (!options.follow) {
      if (got) continue;  // replies are bounded: ask until nothing is left
      break;
    }
    JobState state = reply.state();
    // Each retry is said, though attempts quicker than a poll leave the
    // state RESTARTING from one look to the next: the attempt count tells
    // them apart, or only the first retry would show.
    const bool retried = reply.attempts() != last_attempts && state == RESTARTING;
    last_attempts = reply.attempts();
    if ((state != last_state || retried) && !IsFinalState(state)) {
      auto info = GetJob(client, options.job_id);
      std::string reason = info.ok() && !info->reason().empty() ? ": " + HangingIndent(info->reason(), 2) : "";
      std::cerr << fmt::format("Job {} is {}{}\n", options.job_id, JobStateText(state), reason);
    }
    last_state = state;
    if (IsFinalState(state)) {
      // Ended: drain what is left, then one more quiet look for output the
      // agents shipped just before their ranks' exits were counted.
      if (got) {
        quiet_after_end = 0;
        continue;
      }
      if (++quiet_after_end >= 2) break;
    }
    if (dvclive) dvclive->Poll();
    Nap(kPollMs);
  }
  std::cout << lines.Flush() << std::flush;
  if (!options.follow) {
    // No output at all may be output removed: say so rather than nothing.
    if (!printed_any) {
      auto info = GetJob(client, options.job_id);
      if (info.ok() && !info->logs_released().empty()) {
        std::cerr << fmt::format("clusterctl: job {} has no logs any more: {}\n", options.job_id,
                                 info->logs_released());
      }
    }
    return 0;
  }
  auto info = GetJob(client, options.job_id);
  if (!info.ok()) return Fail(info.status());
  if (!printed_any && !info->logs_released().empty()) {
    std::cerr << fmt::format("clusterctl: job {} has no logs any more: {}\n", options.job_id, info->logs_released());
  }
  std::string reason = info->reason().empty() ? "" : ": " + HangingIndent(info->reason(), 2);
  std::cerr << fmt::format("Job {} {}{}\n", options.job_id, JobStateText(info->state()), reason);
  if (options.results) {
    // Only a success brings its outputs back; the DVCLive files come either
    // way. A job that names neither has nothing to bring, and may have no
    // working_dir to bring it to.
    Status fetched = Status::Ok();
    if (info->state() == SUCCEEDED && HasResults(*info)) {
      auto dir = ResultsFolder(*info, "");
      fetched = dir.ok() ? FetchOutputs(client, *info, *dir) : dir.status();
    } else if (dvclive) {
      fetched = dvclive->Finish();
    }
    if (!fetched.ok()) return Fail(fetched);
  }
  return info->state() == SUCCEEDED ? 0 : 1;
}

// Loads and checks a job file with its --set overrides.
}  // namespace clusterd::cli
