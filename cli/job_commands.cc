#include "cli/job_commands.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <thread>

#include <fmt/format.h>

#include "cli/array_follow.h"
#include "cli/colour.h"
#include "cli/command_line.h"
#include "cli/job_printer.h"
#include "cli/job_results.h"
#include "cli/log_follow.h"
#include "cli/ship_working_dir.h"
#include "cli/status_printer.h"
#include "cli/sweep_commands.h"
#include "common/clock.h"
#include "common/jobspec/env_match.h"
#include "common/jobspec/job_spec.h"
#include "common/job_state.h"
#include "common/jobspec/search_space.h"
#include "common/text.h"

extern char** environ;

namespace po = boost::program_options;

namespace clusterd::cli {

namespace {

// How often `stop --wait` asks whether the job has ended. Fixed: it only
// sets how soon the command returns after the end, at one small call a time.
constexpr int kStopPollMs = 200;

// A bad job file is a usage error (2), like a bad flag: nothing was sent.
int FailFile(const Status& status) {
  std::cerr << "clusterctl: " << status.message() << std::endl;
  return 2;
}

// Why the sweep's end could not write best_params and trials.csv beside
// it (sweep_commands.cc), found now rather than after the whole sweep ran;
// "" when it can.
std::string BestParamsProblem(const std::string& best, const std::string& working_dir) {
  namespace fs = std::filesystem;
  const fs::path path = working_dir.empty() ? fs::path(best) : fs::path(working_dir) / best;
  const fs::path trials = path.parent_path() / "trials.csv";
  std::error_code ec;
  std::string named = best;
  while (named.size() > 1 && named.back() == '/') named.pop_back();
  if (fs::is_directory(path, ec)) return fmt::format("{} is a folder: name a file, e.g. {}/best_params.yaml", path.string(), named);
  if (path.filename() == "trials.csv") return "trials.csv is written beside it: name another file";
  if (fs::is_directory(trials, ec)) return fmt::format("{} is a folder, where trials.csv goes beside it", trials.string());
  for (fs::path up = path.parent_path(); !up.empty() && up != up.root_path(); up = up.parent_path()) {
    if (!fs::exists(up, ec)) continue;
    if (!fs::is_directory(up, ec)) return fmt::format("{} is not a folder", up.string());
    break;
  }
  return "";
}

Result<JobSpec> LoadSpec(const CommandLine& line, const std::vector<std::string>& overrides) {
  ASSIGN_OR_RETURN(JobSpec spec, LoadJobSpecFile(line.positional[0], overrides));
  const std::string& best = spec.tune().best_params();
  if (spec.has_tune() && !best.empty()) {
    const std::string problem = BestParamsProblem(best, spec.working_dir());
    if (!problem.empty()) {
      return Status::InvalidArgument(fmt::format("{}: key 'tune.best_params': {}", line.positional[0], problem));
    }
  }
  return spec;
}

po::options_description SetFlag(std::vector<std::string>* overrides) {
  po::options_description flags("job file");
  flags.add_options()("set", po::value(overrides)->composing(),
                      "KEY=VALUE: change a key of the file before it is read (dotted keys, YAML values; repeatable)");
  return flags;
}

}  // namespace

int SubmitCommand(const std::vector<std::string>& args) {
  CommandLine line;
  std::vector<std::string> overrides;
  bool follow = false;
  po::options_description flags = SetFlag(&overrides);
  flags.add(JsonFlag(&line));
  po::options_description follow_flags("follow");
  follow_flags.add_options()("follow,f", po::bool_switch(&follow),
                             "stream every rank's log until the job ends; exit 0 only if it SUCCEEDED");
  flags.add(follow_flags);
  int code = ParseCommandLine("submit", "submit JOB.yaml [--set KEY=VALUE]... [--follow] [--json]", args, flags, 1,
                              1, &line);
  if (code >= 0) return code;
  auto spec = LoadSpec(line, overrides);
  if (!spec.ok()) return FailFile(spec.status());
  SubmitJobRequest request;
  *request.mutable_spec() = *spec;
  std::vector<std::string> patterns(spec->env_passthrough().begin(), spec->env_passthrough().end());
  for (const auto& [name, value] : MatchPassthrough(patterns, environ)) (*request.mutable_passthrough_env())[name] = value;
  // The head makes and journals an array's jobs before it answers: 100,000
  // take it about 5 s here, so the deadline grows by 0.2 ms a job (20 s
  // more at the most), lest a submit that worked read as one that failed.
  if (spec->has_array()) line.client.timeout_ms += static_cast<int>(spec->array().count() / 5);
  auto client = HeadClient::Connect(line.client);
  if (!client.ok()) return Fail(client.status());
  Status storage = CheckJobStorage(**client, request.spec());
  if (!storage.ok()) return Fail(storage);
  Status shipped = ShipWorkingDir(**client, request.mutable_spec());
  if (!shipped.ok()) return Fail(shipped);
  SubmitJobReply reply;
  Status st = (*client)->Call(&HeadService::Stub::SubmitJob, request, &reply);
  if (st.code() == Status::Code::kFailedPrecondition && !request.spec().package_id().empty()) {
    // The package left the head's store between upload and submit: once more.
    shipped = ShipWorkingDir(**client, request.mutable_spec(), /*force_upload=*/true);
    if (!shipped.ok()) return Fail(shipped);
    st = (*client)->Call(&HeadService::Stub::SubmitJob, request, &reply);
  }
  if (!st.ok()) return Fail(st);
  if (line.json) {
    std::cout << ToJson(reply) << std::endl;
  } else if (spec->has_tune()) {
    const int64_t trials = TrialCount(spec->tune());
    std::cout << "Submitted sweep " << reply.job_id() << " (" << trials << (trials == 1 ? " trial)" : " trials)")
              << std::endl;
  } else if (spec->has_array()) {
    std::cout << "Submitted array " << reply.job_id() << " (" << reply.array_count()
              << (reply.array_count() == 1 ? " job" : " jobs")
              << (spec->array().max_concurrent() > 0 ? fmt::format(", at most {} at once", spec->array().max_concurrent())
                                                     : std::string())
              << ")" << std::endl;
  } else {
    std::cout << "Submitted job " << reply.job_id() << std::endl;
  }
  if (!follow) return 0;
  if (spec->has_tune()) return FollowSweep(**client, reply.job_id(), spec->working_dir());
  if (spec->has_array()) {
    const int code = FollowArray(**client, reply.job_id(), reply.array_count());
    if (HasResults(request.spec())) {
      // Every job of the array writes the same paths: one folder cannot hold them all.
      std::cerr << "The array's outputs and DVCLive files stay in the cluster's store: `clusterctl fetch JOB --out "
                   "DIR` brings one job's\n";
    }
    return code;
  }
  FollowOptions options;
  options.job_id = reply.job_id();
  options.prefix_ranks = spec->num_workers() > 1;
  options.follow = true;
  options.results = true;
  return StreamLogs(**client, options);
}

int ValidateCommand(const std::vector<std::string>& args) {
  CommandLine line;
  std::vector<std::string> overrides;
  po::options_description flags = SetFlag(&overrides);
  flags.add(JsonFlag(&line));
  int code = ParseCommandLine("validate", "validate JOB.yaml [--set KEY=VALUE]... [--json]", args, flags, 1, 1, &line);
  if (code >= 0) return code;
  auto spec = LoadSpec(line, overrides);
  if (!spec.ok()) return FailFile(spec.status());
  if (line.json) {  // the job as the head would receive it
    std::cout << ToJson(*spec) << "\n";
    return 0;
  }
  std::cout << line.positional[0] << ": OK (" << FormatSpecSummary(*spec) << ")\n";
  return 0;
}

int JobsCommand(const std::vector<std::string>& args) {
  CommandLine line;
  std::string array_id;
  po::options_description flags = JsonFlag(&line);
  flags.add_options()("array", po::value(&array_id), "list every job of this array, one per line");
  int code = ParseCommandLine("jobs", "jobs [--array ID] [--json]", args, flags, 0, 0, &line);
  if (code >= 0) return code;
  auto client = HeadClient::Connect(line.client);
  if (!client.ok()) return Fail(client.status());
  ListJobsReply reply;
  if (array_id.empty()) {
    ListJobsRequest all;
    all.set_page_size(1000);  // fewer round trips than the head's default 100; Call follows the pages
    // The table shows an array as one row: its jobs counted by the head,
    // not sent one by one (--json lists every job).
    all.set_group_arrays(!line.json);
    Status st = (*client)->Call(&HeadService::Stub::ListJobs, all, &reply);
    if (!st.ok()) return Fail(st);
  } else {
    auto members = ListArray(**client, array_id);
    if (!members.ok()) return Fail(members.status());
    *reply.mutable_jobs() = {members->begin(), members->end()};
  }
  if (line.json) {
    std::cout << ToJson(reply) << "\n";
  } else if (array_id.empty()) {
    std::vector<JobInfo> jobs(reply.jobs().begin(), reply.jobs().end());
    std::vector<ArrayStates> counted(reply.arrays().begin(), reply.arrays().end());
    std::cout << ForStdout(FormatJobsTable(jobs, (*client)->HeadNowUnixMs(), counted));
  } else {
    // Its jobs one per line: the table without the array's grouping.
    std::vector<JobInfo> jobs(reply.jobs().begin(), reply.jobs().end());
    for (JobInfo& job : jobs) job.mutable_spec()->clear_array_id();
    std::cout << ForStdout(FormatJobsTable(jobs, (*client)->HeadNowUnixMs()));
  }
  return 0;
}

int JobCommand(const std::vector<std::string>& args) {
  CommandLine line;
  int code = ParseCommandLine("job", "job JOB [--json]", args, JsonFlag(&line), 1, 1, &line);
  if (code >= 0) return code;
  auto client = HeadClient::Connect(line.client);
  if (!client.ok()) return Fail(client.status());
  auto info = GetJob(**client, line.positional[0]);
  if (!info.ok()) return Fail(info.status());
  std::cout << (line.json ? ToJson(*info) + "\n" : ForStdout(FormatJobDetail(*info, (*client)->HeadNowUnixMs())));
  return 0;
}

int LogsCommand(const std::vector<std::string>& args) {
  CommandLine line;
  FollowOptions options;
  po::options_description flags("logs");
  flags.add_options()
    ("rank", po::value(&options.rank)->default_value(-1), "only this rank (default: every rank)")
    ("attempt", po::value(&options.attempt)->default_value(-1), "only this attempt, from 0 (default: every attempt)")
    ("follow,f", po::bool_switch(&options.follow), "keep printing until the job ends; exit 0 only if it SUCCEEDED");
  flags.add(JsonFlag(&line));
  int code = ParseCommandLine("logs", "logs JOB [--rank N] [--attempt A] [-f|--follow] [--json]", args, flags, 1, 1,
                              &line);
  if (code >= 0) return code;
  options.json = line.json;
  if (options.json && options.attempt >= 0) {
    std::cerr << "clusterctl logs: --json prints every attempt's chunks as the head keeps them; leave out --attempt\n";
    return 2;
  }
  if (options.rank < -1 || options.attempt < -1) {
    std::cerr << "clusterctl logs: --rank and --attempt take a number >= 0\n";
    return 2;
  }
  auto client = HeadClient::Connect(line.client);
  if (!client.ok()) return Fail(client.status());
  auto info = GetJob(**client, line.positional[0]);
  if (!info.ok()) return Fail(info.status());
  const int attempts = AttemptCount(*info);
  if (options.attempt >= attempts && IsFinalState(info->state())) {
    return Fail(Status::InvalidArgument(
        attempts == 0 ? fmt::format("job {} ended without running", info->job_id())
                      : fmt::format("job {} ran attempts 0..{}, not {}", info->job_id(), attempts - 1,
                                    options.attempt)));
  }
  const int ranks = std::max(1, info->spec().num_workers());
  if (options.rank >= ranks) {
    return Fail(Status::InvalidArgument(
        ranks == 1 ? fmt::format("job {} has one rank, 0, not {}", info->job_id(), options.rank)
                   : fmt::format("job {} has ranks 0..{}, not {}", info->job_id(), ranks - 1, options.rank)));
  }
  options.job_id = info->job_id();
  options.prefix_ranks = options.rank < 0 && ranks > 1;
  return StreamLogs(**client, options);
}

int StopJobCommand(const std::vector<std::string>& args) {
  CommandLine line;
  int wait_s = 60;
  bool whole_array = false;
  po::options_description flags = JsonFlag(&line);
  po::options_description wait("stop");
  wait.add_options()("wait-s", po::value(&wait_s)->default_value(60),
                     "wait this long for the ranks to exit (0: do not wait)")(
      "array", po::bool_switch(&whole_array), "JOB is an array's id: stop every job of it (as scancel ARRAYID)");
  flags.add(wait);
  int code = ParseCommandLine("stop", "stop JOB [--array] [--wait-s S] [--json]", args, flags, 1, 1, &line);
  if (code >= 0) return code;
  auto client = HeadClient::Connect(line.client);
  if (!client.ok()) return Fail(client.status());
  JobRequest request;
  request.set_job_id(line.positional[0]);
  request.set_whole_array(whole_array);
  JobInfo info;
  Status st = (*client)->Call(&HeadService::Stub::StopJob, request, &info);
  if (!st.ok()) return Fail(st);
  if (whole_array) {
    // The head sent every running rank its SIGTERM; `clusterctl jobs --array` shows them end.
    std::cout << (line.json ? ToJson(info) : "Array " + info.job_id() + ": " + info.reason()) << "\n";
    return 0;
  }
  if (info.spec().array_id() == info.job_id()) {
    std::cerr << fmt::format("Note: {} is the first job of array {}; `clusterctl stop --array {}` stops all of "
                             "them\n", info.job_id(), info.job_id(), info.job_id());
  }
  if (info.job_id().rfind("sweep-", 0) == 0) {
    // A sweep: the head stopped every trial (`clusterctl sweep` shows them),
    // unless it had ended already.
    const std::string text = info.state() == STOPPED
                                 ? "Stopped sweep " + info.job_id() + ": " + info.reason()
                                 : fmt::format("Sweep {} had already ended (state {}): {}", info.job_id(),
                                               JobStateText(info.state()), info.reason());
    std::cout << (line.json ? ToJson(info) : text) << "\n";
    return 0;
  }
  bool ended_before = IsFinalState(info.state()) && info.state() != STOPPED;
  // The head sends SIGTERM, then SIGKILL after its grace period: the job is
  // STOPPED once every rank is down.
  const SystemClock clock;
  const Micros deadline = clock.NowMicros() + Micros{wait_s} * 1'000'000;
  while (!IsFinalState(info.state()) && clock.NowMicros() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(kStopPollMs));
    auto now = GetJob(**client, info.job_id());
    if (!now.ok()) return Fail(now.status());
    info = *now;
  }
  if (line.json) {
    std::cout << ToJson(info) << "\n";
  } else if (ended_before) {
    std::cout << "Job " << info.job_id() << " had already ended (state " << JobStateText(info.state()) << ")\n";
  } else if (IsFinalState(info.state())) {
    std::cout << "Stopped job " << info.job_id() << " (state " << JobStateText(info.state()) << ")\n";
  } else if (wait_s == 0) {
    std::cout << "Stopping job " << info.job_id() << " (state " << JobStateText(info.state()) << ")\n";
  } else {
    return Fail(Status::Unavailable(fmt::format("job {} is still {} after {} s: its ranks have not all exited",
                                                info.job_id(), JobStateText(info.state()), wait_s)));
  }
  return 0;
}

int MetricsCommand(const std::vector<std::string>& args) {
  CommandLine line;
  bool csv = false;
  po::options_description flags = JsonFlag(&line);
  flags.add_options()("csv", po::bool_switch(&csv), "print CSV: attempt,index,unix_ms,<metrics...>,checkpoint");
  int code = ParseCommandLine("metrics", "metrics JOB [--json|--csv]", args, flags, 1, 1, &line);
  if (code >= 0) return code;
  if (csv && line.json) {
    std::cerr << "clusterctl metrics: --json and --csv cannot be used together\n";
    return 2;
  }
  auto client = HeadClient::Connect(line.client);
  if (!client.ok()) return Fail(client.status());
  JobRequest request;
  request.set_job_id(line.positional[0]);
  MetricsReply reply;
  Status st = (*client)->Call(&HeadService::Stub::GetMetrics, request, &reply);
  if (!st.ok()) return Fail(st);
  if (line.json) {
    std::cout << ToJson(reply) << "\n";
  } else {
    std::cout << (csv ? FormatMetricsCsv(reply) : FormatMetricsTable(reply));
  }
  return 0;
}

}  // namespace clusterd::cli
