#include "cli/sweep_commands.h"

#include <chrono>
#include <filesystem>
#include <iostream>
#include <thread>

#include <fmt/format.h>

#include "cli/command_line.h"
#include "cli/head_outage.h"
#include "cli/job_results.h"
#include "cli/log_follow.h"
#include "cli/sweep_printer.h"
#include "common/file_util.h"
#include "common/proto_json.h"

namespace clusterd::cli {

namespace {

namespace fs = std::filesystem;

// How often a sweep's follow asks for its trials. Fixed, as a job's follow
// poll (log_follow.cc): a sweep's table changes at the pace of its epochs.
constexpr int kPollMs = 500;

Result<SweepInfo> GetSweep(HeadClient& client, const std::string& id) {
  SweepRequest request;
  request.set_sweep_id(id);
  SweepInfo info;
  RETURN_IF_ERROR(client.Call(&HeadService::Stub::GetSweep, request, &info));
  return info;
}

Status WriteText(const fs::path& path, const std::string& text) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  if (ec) return Status::IOError(fmt::format("cannot make {}: {}", path.parent_path().string(), ec.message()));
  return WriteFileAtomic(path.string(), text);
}

Status WriteResults(const SweepInfo& sweep, const std::string& working_dir) {
  fs::path dir = working_dir.empty() ? fs::current_path() : fs::path(working_dir);
  fs::path best = dir / sweep.spec().tune().best_params();
  const std::string yaml = BestParamsYaml(sweep);
  if (!yaml.empty()) {
    RETURN_IF_ERROR(WriteText(best, yaml));
    std::cout << "Best parameters: " << best.string() << "\n";
  }
  fs::path csv = best.parent_path() / "trials.csv";
  RETURN_IF_ERROR(WriteText(csv, TrialsCsv(sweep)));
  std::cout << "Trials: " << csv.string() << "\n";
  return Status::Ok();
}

// The best trial's outputs and DVCLive files, where a single job's would
// go: what a DVC stage running the sweep declares as its outs. A best
// trial without outputs (stopped before it wrote them) is said, not fatal:
// the sweep itself succeeded, and DVC names the missing file.
void FetchBestTrial(HeadClient& client, const SweepInfo& sweep, const std::string& working_dir) {
  if (!HasResults(sweep.spec())) return;
  if (sweep.best_trial() < 0 || sweep.best_trial() >= sweep.trials_size()) return;
  const std::string& job_id = sweep.trials(sweep.best_trial()).job_id();
  auto job = GetJob(client, job_id);
  Status fetched = job.status();
  if (job.ok()) {
    auto dir = ResultsFolder(*job, working_dir.empty() ? fs::current_path().string() : working_dir);
    fetched = dir.ok() ? FetchOutputs(client, *job, *dir) : dir.status();
  }
  if (!fetched.ok()) std::cerr << "clusterctl: warning: the best trial's results: " << fetched.message() << "\n";
}

}  // namespace

int FollowSweep(HeadClient& client, const std::string& sweep_id, const std::string& working_dir) {
  std::string shown;
  HeadOutage outage(client.follow_outage_ms());
  while (true) {
    auto sweep = GetSweep(client, sweep_id);
    if (!sweep.ok()) {
      if (!outage.TryAgain(sweep.status())) return Fail(sweep.status());
      client.AwaitHead(kPollMs);
      continue;
    }
    outage.Over();
    std::string table = FormatSweepTable(*sweep);
    if (table != shown) {
      std::cout << table << std::flush;
      shown = table;
    }
    if (sweep->state() != SWEEP_RUNNING) {
      Status written = WriteResults(*sweep, working_dir);
      if (!written.ok()) return Fail(written);
      FetchBestTrial(client, *sweep, working_dir);
      return sweep->state() == SWEEP_SUCCEEDED ? 0 : 1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(kPollMs));
  }
}

int SweepCommand(const std::vector<std::string>& args) {
  CommandLine line;
  boost::program_options::options_description flags("output");
  flags.add_options()("json", boost::program_options::bool_switch(&line.json), "print JSON, for scripts");
  int code = ParseCommandLine("sweep", "sweep SWEEP [--json]", args, flags, 1, 1, &line);
  if (code >= 0) return code;
  auto client = HeadClient::Connect(line.client);
  if (!client.ok()) return Fail(client.status());
  auto sweep = GetSweep(**client, line.positional[0]);
  if (!sweep.ok()) return Fail(sweep.status());
  std::cout << (line.json ? ToJson(*sweep) + "\n" : FormatSweepTable(*sweep));
  return 0;
}

}  // namespace clusterd::cli
