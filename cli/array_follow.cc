#include "cli/array_follow.h"

#include <chrono>
#include <iostream>
#include <map>
#include <thread>

#include "cli/command_line.h"
#include "cli/head_outage.h"
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
  // The head counts the array's jobs by state: one small reply however
  // large the array (a head too old to count sends the states of all).
  ListJobsRequest request;
  request.set_array_id(array_id);
  request.set_states_only(true);
  request.set_group_arrays(true);
  request.set_page_size(1000);
  std::string shown;
  HeadOutage outage(client.follow_outage_ms());
  for (;;) {
    ListJobsReply reply;
    Status st = client.Call(&HeadService::Stub::ListJobs, request, &reply);
    if (!st.ok()) {
      if (!outage.TryAgain(st)) return Fail(st);
      client.AwaitHead(500);
      continue;
    }
    outage.Over();
    std::map<JobState, int> by_state;
    if (reply.arrays_size() > 0) {
      by_state = CountStates(reply.arrays(0));
    } else {
      std::vector<const JobInfo*> members;
      for (const JobInfo& job : reply.jobs()) members.push_back(&job);
      by_state = CountStates(members);
    }
    int listed = 0, ended = 0;
    for (const auto& [state, n] : by_state) {
      listed += n;
      ended += IsTerminal(state) ? n : 0;
    }
    std::string line = FormatArrayStates(by_state, count);
    if (line != shown) std::cout << "array " << array_id << ": " << line << std::endl;
    shown = line;
    if (ended == listed) return by_state[SUCCEEDED] == count ? 0 : 1;
    std::this_thread::sleep_for(std::chrono::milliseconds(count > 1000 ? 2000 : 500));
  }
}

}  // namespace clusterd::cli
