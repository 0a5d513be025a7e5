// HeadService over real gRPC on a loopback port, its calls run on a real
// EventLoop: what a hostile or unlucky call does to the head.
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server.h>
#include <grpcpp/server_builder.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <limits>
#include <memory>
#include <stdexcept>
#include <thread>

#include "cli/client.h"
#include "cli/status_printer.h"
#include "common/net/auth.h"
#include "common/latency_histogram.h"
#include "daemon/rpc/head_service.h"
#include "head_harness.h"
#include "sweep_harness.h"
#include "temp_tree.h"

using namespace clusterd;
using namespace clusterd::testing;

namespace {

constexpr const char* kToken = "head-service-test-token";

// A journal whose writes throw, as a library deep under the core might.
class ThrowingStore : public MemoryJobStore {
 public:
  Status Append(const JournalEntry& entry) override {
    if (throw_) throw std::runtime_error("disk library exploded");
    return MemoryJobStore::Append(entry);
  }
  bool throw_ = false;
};

// The system clock, set ahead by skew_ms: a head on another machine whose
// clock disagrees with clusterctl's.
class SkewedClock : public SystemClock {
 public:
  int64_t UnixMillis() const override { return SystemClock::UnixMillis() + skew_ms; }
  int64_t skew_ms = 0;
};

// Every metric record kept: the paging tests send 25,000 reports of one
// job (thinning past job_metrics_max_records is job_metrics_test's).
Config KeepingEveryMetric() {
  Config config;
  config.job_metrics_max_records = 0;
  config.job_metrics_max_mb = 0;
  return config;
}

struct HeadServer {
  TempTree dir;
  SkewedClock clock;
  ThrowingStore store;
  LogStore logs{dir.Path("jobs")};
  Config config = KeepingEveryMetric();
  HeadCore core{&clock, config, &store, &logs};
  EventLoop loop{"test-loop"};
  HeadServiceImpl service{&core, &loop};
  std::unique_ptr<grpc::Server> server;
  std::unique_ptr<HeadService::Stub> stub;
  std::string address;

  explicit HeadServer(const Config& given = KeepingEveryMetric()) : config(given) {
    core.users().SetAdminToken(kToken);
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&service);
    server = builder.BuildAndStart();
    REQUIRE(server);
    REQUIRE(port > 0);
    loop.Start();
    address = "127.0.0.1:" + std::to_string(port);
    stub = HeadService::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  }
  ~HeadServer() {
    server->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(500));
    loop.Stop();
  }

  // A context with the token and a deadline a dead loop would run into.
  std::unique_ptr<grpc::ClientContext> Context() {
    auto context = std::make_unique<grpc::ClientContext>();
    AttachToken(context.get(), kToken);
    context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    return context;
  }

  grpc::Status Status() {
    ClusterStatus reply;
    return stub->GetStatus(Context().get(), StatusRequest(), &reply);
  }

  // Node a of one CPU, registered with the core; its stream. Call it on the loop.
  std::shared_ptr<FakeAgentConnection> RegisterNodeA() {
    auto agent = std::make_shared<FakeAgentConnection>();
    AgentMessage reg;
    reg.mutable_register_()->set_name("a");
    reg.mutable_register_()->set_address("10.0.0.1");
    (*reg.mutable_register_()->mutable_total()->mutable_amounts())[kCpu] = 1;
    core.OnAgentMessage(agent, reg);
    return agent;
  }

  // What clusterctl's client needs to reach this head: its address and token.
  cli::ClientOptions CliOptions() const {
    cli::ClientOptions options;
    options.address = address;
    options.token = kToken;
    return options;
  }

  grpc::Status SubmitJobs(const SubmitJobsRequest& batch) {
    SubmitJobsReply reply;
    return stub->SubmitJobs(Context().get(), batch, &reply);
  }
};

// KeepingEveryMetric with one limit lowered by `lower`.
Config KeepingEveryMetricWith(const std::function<void(Config&)>& lower) {
  Config config = KeepingEveryMetric();
  lower(config);
  return config;
}

}  // namespace

TEST_CASE("a handler that throws fails its call with INTERNAL and the loop serves the next", "[rpc]") {
  HeadServer h;
  REQUIRE(h.Status().ok());
  h.store.throw_ = true;
  Harness shape;  // only for its request builder
  SubmitJobReply reply;
  grpc::Status submitted = h.stub->SubmitJob(h.Context().get(), shape.Request(1, 1, PACK), &reply);
  REQUIRE(submitted.error_code() == grpc::StatusCode::INTERNAL);
  REQUIRE_THAT(submitted.error_message(), Catch::Contains("SubmitJob") && Catch::Contains("disk library exploded"));
  h.store.throw_ = false;
  REQUIRE(h.Status().ok());  // the loop lives on
}

TEST_CASE("a submitter cannot pass a job off as a sweep's trial: sweep_id is the head's own", "[rpc]") {
  HeadServer h;
  Harness shape;
  SubmitJobRequest request = shape.Request(1, 1, PACK);
  request.mutable_spec()->set_sweep_id("sweep-0001");
  SubmitJobReply reply;
  grpc::Status refused = h.stub->SubmitJob(h.Context().get(), request, &reply);
  CHECK(refused.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CHECK(refused.error_message() == "key 'sweep_id': set by the head for a sweep's trials, not by a submitter");
  SubmitJobsRequest batch;
  *batch.add_jobs() = shape.Request(1, 1, PACK);
  *batch.add_jobs() = request;
  refused = h.SubmitJobs(batch);
  CHECK(refused.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CHECK(refused.error_message() ==
        "job 2 of 2: key 'sweep_id': set by the head for a sweep's trials, not by a submitter");
  CHECK(h.core.jobs().List().empty());  // a bad one makes none
}

// One SubmitJobs call of 90,000 jobs was taken whole, however many the
// head already held. Past the limit the call makes none, not the first few.
TEST_CASE("a SubmitJobs call past max_submitted_jobs_per_user is refused whole, with the limit and its key",
          "[rpc][limits]") {
  HeadServer h(KeepingEveryMetricWith([](Config& c) { c.max_submitted_jobs_per_user = 10; }));
  Harness shape;
  SubmitJobsRequest batch;
  for (int i = 0; i < 4; ++i) *batch.add_jobs() = shape.Request(1, 1, PACK);
  SubmitJobRequest array = shape.Request(1, 1, PACK);
  array.mutable_spec()->mutable_array()->set_count(7);
  *batch.add_jobs() = array;  // 11 jobs in all
  grpc::Status refused = h.SubmitJobs(batch);
  CHECK(refused.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED);
  CHECK(refused.error_message() ==
        "5 specs in one call: refused: user admin has 0 jobs not yet finished, and 11 jobs more "
        "would pass the limit of 10 per user (config max_submitted_jobs_per_user); nothing was submitted. Wait for "
        "jobs to finish, or stop some (clusterctl stop)");
  CHECK(h.core.jobs().List().empty());
  batch.mutable_jobs(4)->mutable_spec()->mutable_array()->set_count(6);  // 10: up to the limit
  REQUIRE(h.SubmitJobs(batch).ok());
  CHECK(h.core.jobs().List().size() == 10);
}

TEST_CASE("SubmitJobs checks each gang against the head's max_num_workers before it makes any job",
          "[rpc][limits]") {
  HeadServer h(KeepingEveryMetricWith([](Config& c) { c.max_num_workers = 2; }));
  Harness shape;
  SubmitJobsRequest batch;
  *batch.add_jobs() = shape.Request(2, 1, PACK);
  *batch.add_jobs() = shape.Request(3, 1, PACK);
  grpc::Status refused = h.SubmitJobs(batch);
  CHECK(refused.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CHECK(refused.error_message() == "job 2 of 2: key 'num_workers': expected an integer between 1 and 2, got 3");
  CHECK(h.core.jobs().List().empty());  // not the first alone
}

TEST_CASE("GetLogs with an offset near INT64_MIN is INVALID_ARGUMENT over the wire, and the head goes on", "[rpc][logs]") {
  HeadServer h;
  Harness shape;
  SubmitJobReply submitted;
  REQUIRE(h.stub->SubmitJob(h.Context().get(), shape.Request(1, 1, PACK), &submitted).ok());
  LogsRequest request;
  request.set_job_id(submitted.job_id());
  request.set_rank(-1);
  (*request.mutable_offsets())[0] = std::numeric_limits<int64_t>::min();
  LogsReply logs;
  grpc::Status refused = h.stub->GetLogs(h.Context().get(), request, &logs);
  REQUIRE(refused.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  REQUIRE(h.Status().ok());
}

TEST_CASE("clusterctl's client follows the pages of ListJobs and GetMetrics: callers see whole replies", "[rpc][pages]") {
  QuietLogs quiet;
  HeadServer h;
  Harness shape;
  for (int i = 0; i < 250; ++i) {
    SubmitJobReply reply;
    REQUIRE(h.stub->SubmitJob(h.Context().get(), shape.Request(1, 1, PACK), &reply).ok());
  }
  // A node and 25000 reports of the first job, on the loop that owns the core.
  REQUIRE(h.loop.Call<bool>([&] {
    auto agent = h.RegisterNodeA();
    for (int i = 0; i < 25'000; ++i) {
      AgentMessage m;
      m.mutable_metrics()->set_job_id("job-0001");
      m.mutable_metrics()->set_rank(0);
      (*m.mutable_metrics()->mutable_values())["loss"] = i;
      h.core.OnAgentMessage(agent, m);
    }
    return h.core.jobs().Get("job-0001")->state() == RUNNING;
  }));

  auto client = cli::HeadClient::Connect(h.CliOptions());
  REQUIRE(client.ok());
  ListJobsReply jobs;
  REQUIRE((*client)->Call(&HeadService::Stub::ListJobs, ListJobsRequest(), &jobs).ok());
  REQUIRE(jobs.jobs_size() == 250);
  REQUIRE(jobs.jobs(249).job_id() == "job-0250");
  REQUIRE(jobs.next_page_token().empty());
  JobRequest request;
  request.set_job_id("job-0001");
  MetricsReply metrics;
  REQUIRE((*client)->Call(&HeadService::Stub::GetMetrics, request, &metrics).ok());
  REQUIRE(metrics.records_size() == 25'000);
  REQUIRE(metrics.records(24'999).index() == 24'999);
  REQUIRE(metrics.next_page_token().empty());
}

TEST_CASE("clusterctl's client takes replies above gRPC's default 4 MiB", "[rpc][pages][logs]") {
  QuietLogs quiet;
  HeadServer h;
  Harness shape;
  SubmitJobReply submitted;
  REQUIRE(h.stub->SubmitJob(h.Context().get(), shape.Request(1, 1, PACK), &submitted).ok());
  h.loop.Call<bool>([&] {
    auto agent = h.RegisterNodeA();
    AgentMessage log;
    log.mutable_log()->set_job_id(submitted.job_id());
    log.mutable_log()->set_data(std::string(5 << 20, 'x'));
    h.core.OnAgentMessage(agent, log);
    return true;
  });
  LogsRequest request;
  request.set_job_id(submitted.job_id());
  request.set_rank(-1);
  request.set_max_bytes(JobManager::kMaxReplyBytes);  // 4 MiB of log, and the message around it
  LogsReply logs;
  grpc::Status plain = h.stub->GetLogs(h.Context().get(), request, &logs);
  REQUIRE(plain.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED);  // a channel with the defaults
  auto client = cli::HeadClient::Connect(h.CliOptions());
  REQUIRE(client.ok());
  REQUIRE((*client)->Call(&HeadService::Stub::GetLogs, request, &logs).ok());
  REQUIRE(logs.chunks(0).data().size() == JobManager::kMaxReplyBytes);
}

TEST_CASE("clusterctl tells a head that refuses a call for its journal from a head it cannot reach", "[rpc][journal]") {
  QuietLogs quiet;
  HeadServer h;
  cli::ClientOptions options = h.CliOptions();
  auto client = cli::HeadClient::Connect(options);
  REQUIRE(client.ok());
  Harness shape;
  h.loop.Call<bool>([&] {
    h.store.set_fail_appends(true);
    return true;
  });
  SubmitJobReply reply;
  Status refused = (*client)->Call(&HeadService::Stub::SubmitJob, shape.Request(1, 1, PACK), &reply);
  REQUIRE(refused.code() == Status::Code::kUnavailable);
  REQUIRE(refused.message() == "the head at " + h.address +
                                   " refused the call: the head's journal cannot be written: memory job store: append "
                                   "failure injected; the job was not submitted");
  ClusterStatus status;
  REQUIRE((*client)->Call(&HeadService::Stub::GetStatus, StatusRequest(), &status).ok());
  REQUIRE_FALSE(status.journal().ok());

  options.address = "127.0.0.1:1";  // nothing listens there
  options.timeout_ms = 2000;
  auto nobody = cli::HeadClient::Connect(options);
  REQUIRE(nobody.ok());
  Status unreachable = (*nobody)->Call(&HeadService::Stub::GetStatus, StatusRequest(), &status);
  REQUIRE(unreachable.code() == Status::Code::kUnavailable);
  REQUIRE_THAT(unreachable.message(), Catch::StartsWith("cannot reach a clusterd head at 127.0.0.1:1"));
}

// Rule 11: clusterctl shows how long ago a node was heard from and how long
// a job has run by times the head stamped, so it measures them against the
// head's clock (sent with every answer), not against its own machine's.
TEST_CASE("clusterctl measures against the head's clock, five minutes ahead of its own", "[rpc]") {
  QuietLogs quiet;
  HeadServer h;
  h.clock.skew_ms = 5 * 60 * 1000;
  auto client = cli::HeadClient::Connect(h.CliOptions());
  REQUIRE(client.ok());
  const int64_t local = SystemClock().UnixMillis();
  REQUIRE(std::llabs((*client)->HeadNowUnixMs() - local) < 5000);  // no answer yet: its own clock
  ClusterStatus status;
  REQUIRE((*client)->Call(&HeadService::Stub::GetStatus, StatusRequest(), &status).ok());
  const int64_t head_now = (*client)->HeadNowUnixMs();
  REQUIRE(std::llabs(head_now - (SystemClock().UnixMillis() + h.clock.skew_ms)) < 5000);
  // A node the head heard 2 s ago by its clock reads 2 s, not 302 s.
  NodeInfo node;
  node.set_name("w1");
  node.set_state(ALIVE);
  node.set_last_heartbeat_unix_ms(h.clock.UnixMillis() - 2000);
  *status.add_nodes() = node;
  status.mutable_node_counts()->set_alive(1);
  const std::string text = cli::FormatClusterStatus(status, head_now, true);
  INFO(text);
  REQUIRE(text.find("last heard 2.") != std::string::npos);
}

TEST_CASE("each unary call to the head is timed under its full method name, a refused one too", "[rpc]") {
  HeadServer h;
  const std::string method = "/clusterd.HeadService/GetStatus";
  auto count = [&] {
    auto series = RpcLatency().Snapshot();
    auto it = series.find(method);
    return it == series.end() ? uint64_t{0} : it->second.count;
  };
  // Observed on the head's loop as the status is handed to gRPC: polled, as another thread's.
  auto count_reaches = [&](uint64_t want) {
    for (int i = 0; i < 500 && count() < want; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return count() == want;
  };
  const uint64_t before = count();
  REQUIRE(h.Status().ok());
  REQUIRE(count_reaches(before + 1));
  grpc::ClientContext no_token;
  ClusterStatus reply;
  REQUIRE(h.stub->GetStatus(&no_token, StatusRequest(), &reply).error_code() == grpc::StatusCode::UNAUTHENTICATED);
  REQUIRE(count_reaches(before + 2));
}

// Deleted alone, a trial's job would leave its sweep naming a job that is
// gone.
TEST_CASE("a sweep's trial job is deleted with its sweep and refused alone", "[rpc][sweep]") {
  QuietLogs quiet;
  HeadServer h;
  const std::string sweep = h.loop.Call<std::string>([&] { return *h.core.sweeps().Submit(SweepSubmit(2, 1)); });
  const std::string trial = h.loop.Call<std::string>([&] {
    const std::string job = h.core.sweeps().Get(sweep)->trials(0).job_id();
    h.core.jobs().Stop(job, "stopped by a test");
    return job;
  });
  JobRequest request;
  request.set_job_id(trial);
  JobInfo reply;
  grpc::Status refused = h.stub->DeleteJob(h.Context().get(), request, &reply);
  CHECK(refused.error_code() == grpc::StatusCode::FAILED_PRECONDITION);
  CHECK(refused.error_message() ==
        "job " + trial + " is trial 0 of sweep " + sweep + ": delete the sweep (`clusterctl delete " + sweep + "`)");
  CHECK(h.loop.Call<bool>([&] { return h.core.jobs().Get(trial).ok(); }));
}

// Stopping a sweep that has ended must not answer "Stopped".
TEST_CASE("a stop of a sweep answers with its state: STOPPED once stopped and as it ended when it had", "[rpc][sweep]") {
  QuietLogs quiet;
  HeadServer h;
  auto stop = [&](const std::string& id) {
    JobRequest request;
    request.set_job_id(id);
    JobInfo reply;
    REQUIRE(h.stub->StopJob(h.Context().get(), request, &reply).ok());
    return reply;
  };
  const std::string running = h.loop.Call<std::string>([&] { return *h.core.sweeps().Submit(PlainSweepSubmit(1, 1)); });
  JobInfo stopped = stop(running);
  CHECK(stopped.state() == STOPPED);
  CHECK(stopped.reason() == "stopped by clusterctl stop");

  // A sweep whose only trial's job was stopped ends FAILED: no trial ran to its end.
  const std::string ended = h.loop.Call<std::string>([&] {
    const std::string id = *h.core.sweeps().Submit(PlainSweepSubmit(1, 1));
    h.core.jobs().Stop(h.core.sweeps().Get(id)->trials(0).job_id(), "stopped by a test");
    h.core.Tick();
    return id;
  });
  REQUIRE(h.loop.Call<SweepState>([&] { return h.core.sweeps().Get(ended)->state(); }) == SWEEP_FAILED);
  JobInfo again = stop(ended);
  CHECK(again.state() == FAILED);
  CHECK(again.reason() == h.loop.Call<std::string>([&] { return h.core.sweeps().Get(ended)->reason(); }));
  CHECK(h.loop.Call<SweepState>([&] { return h.core.sweeps().Get(ended)->state(); }) == SWEEP_FAILED);
}
