// A thin HeadService client for the jobs benchmark: SubmitJob, GetJob and
// ListJobs with the cluster token, plus the wall clock the latency part
// compares against the ranks' own start times.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "cluster.grpc.pb.h"

namespace clusterd::bench {

// CLOCK_REALTIME in ns: the one clock both this process and a rank read.
int64_t RealtimeNs();

class JobClient {
 public:
  JobClient(const std::string& address, const std::string& token);

  // The job id, or "" with the reason in *error.
  std::string Submit(const JobSpec& spec, std::string* error = nullptr);
  bool Get(const std::string& job_id, JobInfo* info, std::string* error = nullptr);
  // Every job, all pages of ListJobs joined.
  bool List(ListJobsReply* reply, std::string* error = nullptr);
  // Every job of array `array_id`, in index order.
  bool ListArray(const std::string& array_id, std::vector<JobInfo>* jobs, std::string* error = nullptr);

 private:
  std::string token_;
  std::unique_ptr<HeadService::Stub> stub_;
};

bool IsTerminal(JobState state);

}  // namespace clusterd::bench
