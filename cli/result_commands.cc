#include "cli/result_commands.h"

#include <algorithm>
#include <iostream>

#include <fmt/format.h>

#include "cli/command_line.h"
#include "cli/job_results.h"
#include "common/proto_json.h"

namespace po = boost::program_options;

namespace clusterd::cli {

namespace {

Result<JobInfo> Job(HeadClient& client, const std::string& id, bool remove, bool whole_array = false) {
  JobRequest request;
  request.set_job_id(id);
  request.set_whole_array(whole_array);
  JobInfo info;
  RETURN_IF_ERROR(client.Call(remove ? &HeadService::Stub::DeleteJob : &HeadService::Stub::GetJob, request, &info));
  return info;
}

}  // namespace

int FetchCommand(const std::vector<std::string>& args) {
  CommandLine line;
  std::string out;
  bool checkpoint = false, no_wait = false;
  int wait_s = 600;
  po::options_description flags("fetch");
  flags.add_options()
    ("out", po::value(&out), "folder to write into (default: the job's working_dir, if it is on this machine)")
    ("checkpoint", po::bool_switch(&checkpoint), "the newest stored checkpoint instead (default --out: here)")
    ("wait-s", po::value(&wait_s)->default_value(wait_s),
     "--checkpoint: how long to wait for the checkpoint rank 0 reported last to reach the store")
    ("no-wait", po::bool_switch(&no_wait), "--checkpoint: the newest stored now, even if a newer one is on its way");
  int code = ParseCommandLine("fetch", "fetch JOB [--out DIR] [--checkpoint [--no-wait]]", args, flags, 1, 1, &line);
  if (code >= 0) return code;
  auto client = HeadClient::Connect(line.client);
  if (!client.ok()) return Fail(client.status());
  auto job = Job(**client, line.positional[0], false);
  if (!job.ok()) return Fail(job.status());
  if (checkpoint) {
    if (!no_wait) {
      job = WaitForReportedCheckpoint(**client, *job, std::chrono::seconds(std::max(0, wait_s)));
      if (!job.ok()) return Fail(job.status());
    }
    auto dir = ResultsFolder(*job, out.empty() ? "." : out);
    Status fetched = dir.ok() ? FetchCheckpoint(**client, *job, *dir) : dir.status();
    return fetched.ok() ? 0 : Fail(fetched);
  }
  if (!HasResults(*job)) {
    return Fail(Status::NotFound(fmt::format("job {} names no outputs and no dvclive folder: nothing to fetch "
                                             "(--checkpoint fetches its newest stored checkpoint)", job->job_id())));
  }
  auto dir = ResultsFolder(*job, out);
  Status fetched = dir.ok() ? FetchOutputs(**client, *job, *dir) : dir.status();
  return fetched.ok() ? 0 : Fail(fetched);
}

int DeleteCommand(const std::vector<std::string>& args) {
  CommandLine line;
  bool whole_array = false;
  po::options_description flags = JsonFlag(&line);
  flags.add_options()("array", po::bool_switch(&whole_array),
                      "JOB is an array's id: delete every job of it (all must have finished)");
  int code = ParseCommandLine("delete", "delete JOB [--array] [--json]", args, flags, 1, 1, &line);
  if (code >= 0) return code;
  auto client = HeadClient::Connect(line.client);
  if (!client.ok()) return Fail(client.status());
  auto job = Job(**client, line.positional[0], true, whole_array);
  if (!job.ok()) return Fail(job.status());
  if (line.json) {
    std::cout << ToJson(*job) << "\n";
  } else if (whole_array) {
    std::cout << "Array " << job->job_id() << ": " << job->reason() << "\n";
  } else if (job->job_id().rfind("sweep-", 0) == 0) {
    std::cout << "Deleted sweep " << job->job_id() << " and its trials' jobs, their stored data and their logs\n";
  } else {
    std::cout << "Deleted job " << job->job_id() << ", its stored data and its logs\n";
  }
  return 0;
}

}  // namespace clusterd::cli
