// How clusterctl's HeadClient looks for the leader among heads in HA: a
// scripted head on loopback gRPC answers each GetStatus as a standby, as a
// standby whose server went away under the call (CANCELLED), as a head that
// cancelled a call it served, or as the leader.
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server.h>
#include <grpcpp/server_builder.h>

#include <catch2/catch.hpp>

#include <deque>
#include <memory>
#include <mutex>
#include <string>

#include "cli/client.h"
#include "common/net/leader_redirect.h"
#include "cluster.grpc.pb.h"

using namespace clusterd;

namespace {

enum class Answer {
  kStandbyElecting,  // UNAVAILABLE from a standby that knows of no leader yet
  kCancelled,        // CANCELLED, no trailers: a server shut down under the call
  kServe,            // OK
};

// Answers GetStatus from a script, one answer per call, and counts them.
class ScriptedHead final : public HeadService::CallbackService {
 public:
  explicit ScriptedHead(std::deque<Answer> script) : script_(std::move(script)) {}

  grpc::ServerUnaryReactor* GetStatus(grpc::CallbackServerContext* context, const StatusRequest* /*request*/,
                                      ClusterStatus* reply) override {
    Answer answer = Answer::kServe;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++calls_;
      if (!script_.empty()) {
        answer = script_.front();
        script_.pop_front();
      }
    }
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    switch (answer) {
      case Answer::kStandbyElecting:
        context->AddTrailingMetadata(kLeaderMetadataKey, "");
        reactor->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "this head stands by and knows of no leader yet"));
        break;
      case Answer::kCancelled:
        reactor->Finish(grpc::Status(grpc::StatusCode::CANCELLED, "CANCELLED"));
        break;
      case Answer::kServe:
        reply->set_head_address("served");
        reactor->Finish(grpc::Status::OK);
        break;
    }
    return reactor;
  }

  int calls() {
    std::lock_guard<std::mutex> lock(mutex_);
    return calls_;
  }

 private:
  std::mutex mutex_;
  std::deque<Answer> script_;
  int calls_ = 0;
};

struct ServedScript {
  ScriptedHead head;
  std::unique_ptr<grpc::Server> server;
  std::string address;

  explicit ServedScript(std::deque<Answer> script) : head(std::move(script)) {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&head);
    server = builder.BuildAndStart();
    REQUIRE(server);
    address = "127.0.0.1:" + std::to_string(port);
  }
  ~ServedScript() { server->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(200)); }
};

Status AskStatus(const std::string& addresses, ClusterStatus* reply) {
  cli::ClientOptions options;
  options.address = addresses;
  options.token = "head-client-leader-test-token";
  options.timeout_ms = 5000;
  auto client = cli::HeadClient::Connect(options);
  REQUIRE(client.ok());
  return (*client)->Call(&HeadService::Stub::GetStatus, StatusRequest(), reply);
}

}  // namespace

TEST_CASE("head client: a call a standby's server cancelled as it took over is sent again, and served",
          "[ha][client]") {
  ServedScript head({Answer::kStandbyElecting, Answer::kCancelled, Answer::kServe});
  ClusterStatus reply;
  Status asked = AskStatus(head.address, &reply);
  INFO(asked.message());
  REQUIRE(asked.ok());
  CHECK(reply.head_address() == "served");
  CHECK(head.head.calls() == 3);
}

TEST_CASE("head client: a call cancelled by a head that did not stand by is not sent again: it may have run",
          "[ha][client]") {
  ServedScript head({Answer::kCancelled, Answer::kServe});
  ClusterStatus reply;
  Status asked = AskStatus(head.address, &reply);
  CHECK_FALSE(asked.ok());
  CHECK_THAT(asked.message(), Catch::Contains("went away during the call"));
  CHECK(head.head.calls() == 1);
}

TEST_CASE("head client: with two heads, a standby's cancelled call goes round the heads again, not to the other alone",
          "[ha][client]") {
  // The other head is away (nothing listens): the call comes back to the
  // standby, which now leads.
  ServedScript standby({Answer::kStandbyElecting, Answer::kCancelled, Answer::kServe});
  ClusterStatus reply;
  Status asked = AskStatus("127.0.0.1:1," + standby.address, &reply);
  INFO(asked.message());
  REQUIRE(asked.ok());
  CHECK(reply.head_address() == "served");
  CHECK(standby.head.calls() == 3);
}
