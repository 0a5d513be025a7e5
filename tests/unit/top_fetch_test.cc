// What one refresh of `clusterctl top` asks the head: its calls counted on
// a real HeadService over loopback gRPC, with a core that runs many jobs.
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server.h>
#include <grpcpp/server_builder.h>
#include <grpcpp/support/server_interceptor.h>

#include <catch2/catch.hpp>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cli/top_command.h"
#include "daemon/rpc/head_service.h"
#include "head_harness.h"

using namespace clusterd;
using namespace clusterd::testing;

namespace {

constexpr const char* kToken = "top-fetch-test-token";

// The calls the server was asked, by method ("/clusterd.HeadService/GetStatus").
class CallCounts {
 public:
  void Add(const std::string& method) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++counts_[method];
  }
  std::map<std::string, int> Take() {
    std::lock_guard<std::mutex> lock(mutex_);
    return std::move(counts_);
  }

 private:
  std::mutex mutex_;
  std::map<std::string, int> counts_;
};

class CountingInterceptor : public grpc::experimental::Interceptor {
 public:
  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override { methods->Proceed(); }
};

class CountingFactory : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit CountingFactory(CallCounts* counts) : counts_(counts) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(grpc::experimental::ServerRpcInfo* info) override {
    counts_->Add(info->method());
    return new CountingInterceptor;
  }

 private:
  CallCounts* counts_;
};

// A head core (head_harness.h) served over loopback gRPC, every call counted.
struct CountedHead {
  Harness h;
  EventLoop loop{"top-fetch-loop"};
  std::unique_ptr<HeadServiceImpl> service;
  std::unique_ptr<grpc::Server> server;
  CallCounts calls;
  std::unique_ptr<cli::HeadClient> client;

  CountedHead() {
    h.head->users().SetAdminToken(kToken);
    service = std::make_unique<HeadServiceImpl>(h.head.get(), &loop);
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(service.get());
    std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> counting;
    counting.push_back(std::make_unique<CountingFactory>(&calls));
    builder.experimental().SetInterceptorCreators(std::move(counting));
    server = builder.BuildAndStart();
    REQUIRE(server);
    loop.Start();
    cli::ClientOptions options;
    options.address = "127.0.0.1:" + std::to_string(port);
    options.token = kToken;
    auto connected = cli::HeadClient::Connect(options);
    REQUIRE(connected.ok());
    client = std::move(*connected);
  }
  ~CountedHead() {
    server->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(500));
    loop.Stop();
  }

  // `count` one-rank jobs running on node "a"; each odd one has reported
  // loss = its number, twice (the newest is what top shows).
  std::vector<std::string> RunJobs(int count) {
    h.AddNode("a", count);
    std::vector<std::string> ids;
    for (int i = 0; i < count; ++i) {
      ids.push_back(h.Submit(1, 1, PACK));
      REQUIRE(h.Job(ids.back()).state() == RUNNING);
      if (i % 2 == 0) continue;
      for (int seq = 1; seq <= 2; ++seq) {
        AgentMessage m;
        m.mutable_metrics()->set_job_id(ids.back());
        m.mutable_metrics()->set_rank(0);
        m.mutable_metrics()->set_report_seq(seq);
        (*m.mutable_metrics()->mutable_values())["loss"] = seq == 2 ? i : -1;
        h.From("a", m);
      }
    }
    return ids;
  }
};

const std::map<std::string, int> kOneRefresh = {{"/clusterd.HeadService/GetStatus", 1},
                                                {"/clusterd.HeadService/ListRunningJobs", 1}};

}  // namespace

TEST_CASE("top: one refresh is two calls whatever the number of running jobs, each job with its newest record",
          "[top]") {
  QuietLogs quiet;
  for (int jobs : {1, 40}) {
    CAPTURE(jobs);
    CountedHead head;
    std::vector<std::string> ids = head.RunJobs(jobs);
    // A job that is not running (waits for CPUs node a does not have) is not shown.
    head.h.Submit(1, 1000, PACK);
    auto snapshot = cli::FetchTopSnapshot(*head.client, 0, 100);
    REQUIRE(snapshot.ok());
    CHECK(head.calls.Take() == kOneRefresh);
    CHECK(snapshot->running_jobs == jobs);
    REQUIRE(snapshot->jobs.size() == static_cast<size_t>(jobs));
    for (int i = 0; i < jobs; ++i) {
      const cli::TopJob& job = snapshot->jobs[static_cast<size_t>(i)];
      CHECK(job.info.job_id() == ids[static_cast<size_t>(i)]);  // oldest first
      CHECK(job.info.attempts_size() == 1);                    // the whole record, as GetJob gives it
      if (i % 2 == 0) {
        CHECK_FALSE(job.latest);
      } else {
        REQUIRE(job.latest);
        CHECK(job.latest->values().at("loss") == i);
      }
    }
    CHECK(snapshot->status.nodes_size() > 0);
  }
}

TEST_CASE("top: the jobs a refresh fetches are the oldest max_jobs, all of them counted", "[top]") {
  QuietLogs quiet;
  CountedHead head;
  std::vector<std::string> ids = head.RunJobs(30);
  auto snapshot = cli::FetchTopSnapshot(*head.client, 0, 5);
  REQUIRE(snapshot.ok());
  CHECK(head.calls.Take() == kOneRefresh);
  CHECK(snapshot->running_jobs == 30);
  REQUIRE(snapshot->jobs.size() == 5);
  CHECK(snapshot->jobs[4].info.job_id() == ids[4]);
}
