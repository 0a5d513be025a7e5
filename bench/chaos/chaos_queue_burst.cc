// chaos_queue_burst: a burst of jobs that fit no node, for the chaos run.
//   chaos_queue_burst ADDRESS TOKEN N
// Submits N jobs that ask for 100,000 CPUs each (no node holds one) in one
// SubmitJobs call (arrays of at most 1000 jobs, so that the call stays far
// below gRPC's 4 MiB), again and again until the head refuses one: it must
// refuse past max_submitted_jobs_per_user or max_submitted_jobs, whole
// (nothing of the refused call queued), with an error that names the limit
// and its config key. After each call a GetStatus must answer within 2 s
// and sum the waiting jobs up in at most 20 demands. Then it stops and
// deletes every job it made. A deadline of 30 s bounds every call.
// Prints one line:
//   queue_burst n=N calls=C accepted=A refused=yes|no status_ms=MAX demands=D cleaned=K [FINDING ...]
// Exit 0 when every check held, 1 on a finding, 2 on bad arguments.
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "cluster.grpc.pb.h"
#include "common/net/auth.h"

namespace {

constexpr int kArrayJobs = 1000;
constexpr int kMaxDemands = 20;                 // JobManager::kDemandShapes
constexpr double kStatusBoundMs = 2000;
constexpr int64_t kGiveUpAfterJobs = 1'000'000;  // never refused by then: a finding

std::unique_ptr<grpc::ClientContext> Context(const std::string& token, int seconds) {
  auto context = std::make_unique<grpc::ClientContext>();
  clusterd::AttachToken(context.get(), token);
  context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(seconds));
  return context;
}

// One call's worth: `n` jobs as arrays of at most kArrayJobs.
clusterd::SubmitJobsRequest Burst(int64_t n) {
  clusterd::SubmitJobsRequest request;
  for (int64_t left = n; left > 0; left -= kArrayJobs) {
    clusterd::JobSpec* spec = request.add_jobs()->mutable_spec();
    spec->set_name("chaos-queue-burst");
    spec->add_entrypoint("/bin/true");
    spec->set_working_dir("/tmp");
    spec->set_working_dir_mode(clusterd::SHARED);
    spec->set_num_workers(1);
    (*spec->mutable_resources_per_worker()->mutable_amounts())["CPU"] = 100000;
    spec->mutable_array()->set_count(static_cast<int32_t>(std::min<int64_t>(left, kArrayJobs)));
  }
  return request;
}

// The jobs waiting, as GetStatus sums them up, and how long it took; -1 when it failed.
int64_t Waiting(clusterd::HeadService::Stub& stub, const std::string& token, double* ms, int* demands) {
  clusterd::StatusRequest request;
  request.set_nodes_per_state(1);
  clusterd::ClusterStatus status;
  auto t0 = std::chrono::steady_clock::now();
  grpc::Status got = stub.GetStatus(Context(token, 30).get(), request, &status);
  *ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (!got.ok()) return -1;
  *demands = status.pending_size();
  int64_t jobs = 0;
  for (const auto& demand : status.pending()) jobs += 1 + demand.more_like_it();
  return jobs;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4 || std::atoll(argv[3]) <= 0) {
    std::cerr << "usage: chaos_queue_burst ADDRESS TOKEN N\n";
    return 2;
  }
  const std::string address = argv[1], token = argv[2];
  const int64_t n = std::atoll(argv[3]);
  auto stub = clusterd::HeadService::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  std::vector<std::string> findings;
  std::vector<std::string> arrays;  // made by accepted calls, to clean up
  int calls = 0, accepted = 0, demands = 0;
  bool refused = false;
  double status_ms_max = 0;
  int64_t submitted = 0;
  while (!refused && submitted < kGiveUpAfterJobs) {
    double ms = 0;
    int shown = 0;
    const int64_t before = Waiting(*stub, token, &ms, &shown);
    clusterd::SubmitJobsReply reply;
    grpc::Status got = stub->SubmitJobs(Context(token, 30).get(), Burst(n), &reply);
    ++calls;
    const int64_t after = Waiting(*stub, token, &ms, &shown);
    status_ms_max = std::max(status_ms_max, ms);
    demands = std::max(demands, shown);
    if (after < 0) {
      findings.push_back("GetStatus failed after a burst");
      break;
    }
    if (ms > kStatusBoundMs) findings.push_back("GetStatus took " + std::to_string(static_cast<int>(ms)) + " ms");
    if (shown > kMaxDemands) findings.push_back("GetStatus listed " + std::to_string(shown) + " demands");
    if (got.ok()) {
      ++accepted;
      submitted += n;
      for (const auto& job : reply.jobs()) arrays.push_back(job.job_id());
      continue;
    }
    if (got.error_code() != grpc::StatusCode::RESOURCE_EXHAUSTED ||
        got.error_message().find("(config max_submitted_jobs") == std::string::npos) {
      findings.push_back("refused without naming the limit: " + std::to_string(got.error_code()) + " " +
                         got.error_message());
      break;
    }
    refused = true;
    if (before >= 0 && after != before) {
      findings.push_back("the refused call queued " + std::to_string(after - before) + " jobs");
    }
  }
  if (!refused && findings.empty()) findings.push_back("never refused, after " + std::to_string(submitted) + " jobs");
  int cleaned = 0;
  for (const std::string& array : arrays) {
    clusterd::JobRequest request;
    request.set_job_id(array);
    request.set_whole_array(true);
    clusterd::JobInfo info;
    if (!stub->StopJob(Context(token, 30).get(), request, &info).ok()) continue;
    if (stub->DeleteJob(Context(token, 30).get(), request, &info).ok()) ++cleaned;
  }
  if (cleaned != static_cast<int>(arrays.size())) {
    findings.push_back("cleaned " + std::to_string(cleaned) + " of " + std::to_string(arrays.size()) + " arrays");
  }
  std::cout << "queue_burst n=" << n << " calls=" << calls << " accepted=" << accepted
            << " refused=" << (refused ? "yes" : "no") << " status_ms=" << static_cast<int>(status_ms_max)
            << " demands=" << demands << " cleaned=" << cleaned;
  for (const std::string& finding : findings) std::cout << " FINDING " << finding << ";";
  std::cout << std::endl;
  return findings.empty() ? 0 : 1;
}
