#include "cli/top_command.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <thread>

#include <fmt/format.h>

#include "cli/command_line.h"
#include "cli/top_terminal.h"

namespace po = boost::program_options;

namespace clusterd::cli {

namespace {

// Without a terminal's height to fit: at most this many jobs are fetched
// and listed each refresh (the rest are counted).
constexpr int kPlainMaxJobs = 100;
constexpr double kMinIntervalS = 0.1;
constexpr double kMaxIntervalS = 3600;

// Plain text, one block per refresh: what a pipe or a file gets.
int RunPlain(HeadClient& client, int interval_ms, bool once) {
  for (bool first = true;; first = false) {
    auto snapshot = FetchTopSnapshot(client, 0, kPlainMaxJobs);
    if (!snapshot.ok()) return Fail(snapshot.status());
    std::string block = first ? "" : "\n";
    for (const auto& line : RenderTopFrame(*snapshot, TopSize{})) block += line + "\n";
    std::cout << block << std::flush;
    if (!std::cout) return 1;  // the reader went away
    if (once) return 0;
    std::this_thread::sleep_for(std::chrono::milliseconds(interval_ms));
  }
}

int RunOnTerminal(HeadClient& client, int interval_ms) {
  TopTerminal terminal(STDIN_FILENO, STDOUT_FILENO);
  std::optional<TopSnapshot> last;
  std::string failure;
  bool fetch = true;
  while (true) {
    const TopSize size = terminal.Size();
    if (fetch) {
      // Rows for every node only where the screen has them: a 10,000-node
      // head is asked for a screenful, not its whole table.
      auto snapshot = FetchTopSnapshot(client, size.height, size.height);
      if (snapshot.ok()) {
        last = std::move(*snapshot);
        failure.clear();
      } else {
        failure = std::string(snapshot.status().message());
      }
    }
    std::vector<std::string> lines;
    if (last) lines = RenderTopFrame(*last, size);
    // A head out of reach: the last frame stays, under a line that says so.
    if (!failure.empty()) {
      const std::string note = "(head not answering, showing the last frame: " + failure + ")";
      lines.insert(lines.begin(), note.substr(0, static_cast<size_t>(size.width)));
      if (lines.size() > static_cast<size_t>(size.height)) lines.resize(size.height);
    }
    terminal.Draw(lines);
    const TopTerminal::Event event = terminal.Wait(interval_ms);
    if (event == TopTerminal::Event::kQuit) return 0;
    fetch = event == TopTerminal::Event::kTimeout;
  }
}

}  // namespace

Result<TopSnapshot> FetchTopSnapshot(HeadClient& client, int nodes_per_state, int max_jobs) {
  TopSnapshot snapshot;
  StatusRequest status_request;
  status_request.set_nodes_per_state(nodes_per_state);
  RETURN_IF_ERROR(client.Call(&HeadService::Stub::GetStatus, status_request, &snapshot.status));
  snapshot.now_unix_ms = client.HeadNowUnixMs();

  // The running jobs with their newest records in one call, however many
  // there are: a refresh is two calls.
  RunningJobsRequest jobs_request;
  jobs_request.set_max_jobs(std::max(1, max_jobs));
  RunningJobsReply running;
  RETURN_IF_ERROR(client.Call(&HeadService::Stub::ListRunningJobs, jobs_request, &running));
  snapshot.running_jobs = running.running_jobs();
  for (RunningJobRecord& one : *running.mutable_jobs()) {
    TopJob job;
    job.info = std::move(*one.mutable_job());
    if (one.has_latest()) job.latest = std::move(*one.mutable_latest());
    snapshot.jobs.push_back(std::move(job));
  }
  return snapshot;
}

int TopCommand(const std::vector<std::string>& args) {
  CommandLine line;
  double interval_s = 2.0;
  bool once = false;
  po::options_description flags("top");
  flags.add_options()("interval", po::value(&interval_s), "seconds between refreshes (default 2)")(
      "once", po::bool_switch(&once), "print one snapshot and exit");
  int code = ParseCommandLine("top", "top [--interval S] [--once]", args, flags, 0, 0, &line);
  if (code >= 0) return code;
  if (!std::isfinite(interval_s) || interval_s < kMinIntervalS || interval_s > kMaxIntervalS) {
    return Fail(Status::InvalidArgument(fmt::format("--interval must be between {} and {} seconds, not {}",
                                                    kMinIntervalS, kMaxIntervalS, interval_s)));
  }
  auto client = HeadClient::Connect(line.client);
  if (!client.ok()) return Fail(client.status());
  const int interval_ms = static_cast<int>(std::lround(interval_s * 1000));
  // --once prints plain text on a terminal too: a frame drawn on the
  // alternate screen would be gone as soon as it was drawn.
  if (once || !isatty(STDOUT_FILENO)) return RunPlain(**client, interval_ms, once);
  return RunOnTerminal(**client, interval_ms);
}

}  // namespace clusterd::cli
