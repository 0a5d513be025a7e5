#include "daemon/head/shown_records.h"

namespace clusterd {

namespace {

void Hide(google::protobuf::Map<std::string, std::string>* env) {
  for (auto& [name, value] : *env) value = kHiddenValue;
}

}  // namespace

void HidePassthroughValues(JobInfo* job) { Hide(job->mutable_passthrough_env()); }

void HidePassthroughValues(ListJobsReply* jobs) {
  for (JobInfo& job : *jobs->mutable_jobs()) HidePassthroughValues(&job);
}

void HidePassthroughValues(SweepInfo* sweep) { Hide(sweep->mutable_passthrough_env()); }

void HidePassthroughValues(ListSweepsReply* sweeps) {
  for (SweepInfo& sweep : *sweeps->mutable_sweeps()) HidePassthroughValues(&sweep);
}

}  // namespace clusterd
