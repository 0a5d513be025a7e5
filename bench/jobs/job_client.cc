#include "job_client.h"

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/channel_arguments.h>
#include <time.h>

#include "common/net/auth.h"

namespace clusterd::bench {

namespace {

constexpr auto kDeadline = std::chrono::seconds(30);

template <typename Call>
bool Invoke(const std::string& token, Call call, std::string* error) {
  grpc::ClientContext context;
  AttachToken(&context, token);
  context.set_deadline(std::chrono::system_clock::now() + kDeadline);
  grpc::Status status = call(&context);
  if (!status.ok() && error) *error = status.error_message();
  return status.ok();
}

}  // namespace

int64_t RealtimeNs() {
  timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  return static_cast<int64_t>(now.tv_sec) * 1000000000LL + now.tv_nsec;
}

JobClient::JobClient(const std::string& address, const std::string& token) : token_(token) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);  // ListJobs of 10,000 jobs is tens of MiB
  stub_ = HeadService::NewStub(grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args));
}

std::string JobClient::Submit(const JobSpec& spec, std::string* error) {
  SubmitJobRequest request;
  *request.mutable_spec() = spec;
  SubmitJobReply reply;
  bool ok = Invoke(token_, [&](grpc::ClientContext* c) { return stub_->SubmitJob(c, request, &reply); }, error);
  return ok ? reply.job_id() : "";
}

bool JobClient::Get(const std::string& job_id, JobInfo* info, std::string* error) {
  JobRequest request;
  request.set_job_id(job_id);
  return Invoke(token_, [&](grpc::ClientContext* c) { return stub_->GetJob(c, request, info); }, error);
}

bool JobClient::ListArray(const std::string& array_id, std::vector<JobInfo>* jobs, std::string* error) {
  jobs->clear();
  ListJobsRequest request;
  request.set_array_id(array_id);
  request.set_page_size(1000);
  do {
    ListJobsReply page;
    if (!Invoke(token_, [&](grpc::ClientContext* c) { return stub_->ListJobs(c, request, &page); }, error)) return false;
    jobs->insert(jobs->end(), page.jobs().begin(), page.jobs().end());
    request.set_page_token(page.next_page_token());
  } while (!request.page_token().empty());
  return true;
}

bool JobClient::List(ListJobsReply* reply, std::string* error) {
  // The head pages ListJobs: follow the pages to the end.
  reply->Clear();
  ListJobsRequest request;
  request.set_page_size(1000);
  while (true) {
    ListJobsReply page;
    if (!Invoke(token_, [&](grpc::ClientContext* c) { return stub_->ListJobs(c, request, &page); }, error)) {
      return false;
    }
    const std::string next = page.next_page_token();
    page.clear_next_page_token();
    reply->MergeFrom(page);
    if (next.empty()) return true;
    request.set_page_token(next);
  }
}

bool IsTerminal(JobState state) { return state == SUCCEEDED || state == FAILED || state == STOPPED || state == INFEASIBLE; }

}  // namespace clusterd::bench
