// HeadService over real gRPC on a loopback port, its calls run on a real
// EventLoop: what a hostile or unlucky call does to the head.
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server.h>
#include <grpcpp/server_builder.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <limits>
#include <memory>
#include <stdexcept>

#include "common/auth.h"
#include "daemon/rpc/head_service.h"
#include "head_harness.h"
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

struct HeadServer {
  TempTree dir;
  SystemClock clock;
  ThrowingStore store;
  LogStore logs{dir.Path("jobs")};
  Config config;
  HeadCore core{&clock, config, &store, &logs};
  EventLoop loop;
  HeadServiceImpl service{&core, &loop, kToken};
  std::unique_ptr<grpc::Server> server;
  std::unique_ptr<HeadService::Stub> stub;

  HeadServer() {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&service);
    server = builder.BuildAndStart();
    REQUIRE(server);
    REQUIRE(port > 0);
    loop.Start();
    stub = HeadService::NewStub(
        grpc::CreateChannel("127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials()));
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
};

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
