// Reading clusterctl's --json answers in the integration tests, whichever
// machine ran it: a message parsed from a run that must have succeeded, a
// submitted job's id, a metric's value, and whether a state is final.
#pragma once

#include <google/protobuf/util/json_util.h>

#include <catch2/catch.hpp>
#include <string>

#include "cluster.pb.h"
#include "harness.h"

namespace clusterd::testing {

// REQUIREs that the command succeeded and printed `Message` as JSON.
template <typename Message>
Message ParseJson(const RunResult& r) {
  INFO("clusterctl: exit " << r.exit_code << ": " << r.err);
  REQUIRE(r.exit_code == 0);
  Message message;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  REQUIRE(google::protobuf::util::JsonStringToMessage(r.out, &message, options).ok());
  return message;
}

// The job id printed by `clusterctl submit --json` (the first line of its
// output, which --follow continues with logs).
inline std::string SubmittedJobId(const RunResult& r) {
  INFO("submit: exit " << r.exit_code << ": " << r.out << r.err);
  auto key = r.out.find("\"job_id\"");
  REQUIRE(key != std::string::npos);
  auto start = r.out.find('"', r.out.find(':', key)) + 1;
  return r.out.substr(start, r.out.find('"', start) - start);
}

// A reported metric's value, REQUIREd to be there.
inline double MetricValue(const MetricRecord& record, const std::string& name) {
  auto it = record.values().find(name);
  REQUIRE(it != record.values().end());
  return it->second;
}

inline bool IsFinal(JobState s) { return s == SUCCEEDED || s == FAILED || s == STOPPED; }

// The job once it is final, as `clusterctl job --json` shows it; REQUIREs
// that it got there within `limit`.
inline JobInfo WaitUntilFinal(Cluster& cluster, const std::string& job_id, std::chrono::milliseconds limit) {
  JobInfo job;
  bool final = WaitFor([&] {
    job = ParseJson<JobInfo>(cluster.Ctl({"job", job_id, "--json"}));
    return IsFinal(job.state());
  }, limit, std::chrono::milliseconds(100));
  INFO("job " << job_id << " still " << JobState_Name(job.state()) << ": " << job.reason());
  REQUIRE(final);
  return job;
}

// The job once it has stored a checkpoint, as `clusterctl job --json` shows
// it; REQUIREs that it got there within `limit`.
inline JobInfo WaitForStoredCheckpoint(Cluster& cluster, const std::string& job_id, std::chrono::milliseconds limit) {
  JobInfo job;
  REQUIRE(WaitFor([&] {
    job = ParseJson<JobInfo>(cluster.Ctl({"job", job_id, "--json"}));
    return job.stored_checkpoints_size() >= 1;
  }, limit, std::chrono::milliseconds(200)));
  return job;
}

}  // namespace clusterd::testing
