#include "cli/array_follow.h"

#include <chrono>
#include <iostream>
#include <thread>

#include "cli/command_line.h"
#include "cli/job_printer.h"
#include "common/job_state.h"

namespace clusterd::cli {

Result<std::vector<JobInfo>> ListArray(HeadClient& client, const std::string& array_id, bool states_only) {
  ListJobsRequest request;
  request.set_array_id(array_id);
  request.set_states_only(states_only);
  request.set_page_size(1000);  // the most per reply; Call follows the pages
  ListJobsReply reply;
  RETURN_IF_ERROR(client.Call(&HeadService::Stub::ListJobs, request, &reply));
  return std::vector<JobInfo>(reply.jobs().begin(), reply.jobs().end());
}

int FollowArray(HeadClient& client, const std::string& array_id, int count) {
  std::string shown;
  for (;;) {
    // States are all it shows: not each job's whole record (a kilobyte).
    auto jobs = ListArray(client, array_id, /*states_only=*/true);
    if (!jobs.ok()) return Fail(jobs.status());
    std::vector<const JobInfo*> members;
    int ended = 0, succeeded = 0;
    for (const JobInfo& job : *jobs) {
      members.push_back(&job);
      ended += IsTerminal(job.state()) ? 1 : 0;
      succeeded += job.state() == SUCCEEDED ? 1 : 0;
    }
    std::string line = FormatArrayStates(members, count);
    if (line != shown) std::cout << "array " << array_id << ": " << line << std::endl;
    shown = line;
    if (ended == static_cast<int>(jobs->size())) return succeeded == count ? 0 : 1;
    // Even by states only, a listing of 10,000 jobs is 10 calls.
    std::this_thread::sleep_for(std::chrono::milliseconds(jobs->size() > 1000 ? 2000 : 500));
  }
}

}  // namespace clusterd::cli
