// What a standby head answers when etcd loses its quorum (HeadLeadership
// and its StandbyServer against real etcd members): it stops naming the
// leader it can no longer confirm, and its refusal says that etcd does not
// answer, naming the members and why, rather than "electing one"; once the
// quorum is back it names a leader again.
#include <catch2/catch.hpp>

#include <grpcpp/client_context.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>

#include <chrono>
#include <string>

#include "cluster.grpc.pb.h"
#include "common/net/leader_redirect.h"
#include "daemon/ha/head_leadership.h"
#include "daemon/ha/leader_election.h"
#include "etcd_members.h"
#include "etcd_test_client.h"
#include "harness.h"
#include "test_skip.h"

using namespace clusterd;
using namespace clusterd::testing;
using std::chrono::milliseconds;
using Steady = std::chrono::steady_clock;

namespace {

struct StandbyAnswer {
  grpc::StatusCode code = grpc::StatusCode::UNKNOWN;
  std::string message;
  std::string leader;  // the leader it named
};

StandbyAnswer AskStandby(const std::string& address) {
  auto stub = HeadService::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
  StatusRequest request;
  ClusterStatus reply;
  grpc::Status status = stub->GetStatus(&context, request, &reply);
  return {status.error_code(), status.error_message(), LeaderRedirectOf(status, context)};
}

}  // namespace

TEST_CASE("HA standby: with etcd's quorum lost it names no leader and says etcd does not answer, naming the "
          "members, and with the quorum back it names the leader again",
          "[ha][etcd]") {
  REQUIRE_ETCD();
  EtcdMembers etcd(3);
  REQUIRE(etcd.error() == "");

  // head-a leads through an election of its own; head-b is a HeadLeadership
  // standing by on a port of its own. Should head-b win once the quorum is
  // back, it does not serve (no head here): it only says so.
  auto client_a = TestEtcdClient(etcd.client_addresses());
  LeaderElectionOptions a_options;
  a_options.prefix = "/standby";
  a_options.id = "head-a";
  a_options.address = "head-a.example:6379";
  LeaderElection a(client_a.get(), a_options);
  REQUIRE(a.Start().ok());
  REQUIRE(WaitFor([&] { return a.IsLeader(); }, milliseconds(5000)));

  HeadLeadershipOptions b_options;
  b_options.endpoints.members = etcd.client_addresses();
  b_options.endpoints.prefix = "/standby";
  b_options.id = "head-b";
  const int port = FreePort();
  b_options.address = "127.0.0.1:" + std::to_string(port);
  b_options.standby.bind_ip = "127.0.0.1";
  b_options.standby.port = port;
  b_options.lead = [](const LeaderTerm&) { return Status::Ok(); };
  b_options.stop_leading = [] {};
  auto b = HeadLeadership::Start(b_options);
  REQUIRE(b.ok());
  const std::string b_address = b_options.address;

  // Standing by, it redirects to the leader.
  REQUIRE(WaitFor([&] { return AskStandby(b_address).leader == "head-a.example:6379"; }, milliseconds(5000)));
  CHECK(AskStandby(b_address).code == grpc::StatusCode::FAILED_PRECONDITION);

  // Two of three members gone: no call that needs a quorum is answered.
  etcd.Kill(1);
  etcd.Kill(2);
  const auto cut_at = Steady::now();
  StandbyAnswer answer;
  // head-b re-reads the leader key at least every TTL (2 s); that read
  // fails within a call's deadline (1 s). 6 s: an outer limit for a loaded
  // machine.
  REQUIRE(WaitFor(
      [&] {
        answer = AskStandby(b_address);
        return answer.message.find("etcd does not answer") != std::string::npos;
      },
      milliseconds(6000), milliseconds(100)));
  INFO("the standby said why " << MillisSince(cut_at) << " ms after the quorum was lost: " << answer.message);
  CHECK(answer.code == grpc::StatusCode::UNAVAILABLE);
  CHECK(answer.leader.empty());
  CHECK_THAT(answer.message, Catch::Contains("no leader: etcd does not answer") &&
                                 Catch::Contains(etcd.client_addresses()[0]) &&
                                 Catch::Contains("no member answered"));
  CHECK_THAT(answer.message, !Catch::Contains("electing"));
  CHECK((*b)->LeaderAddress().empty());
  // And it goes on saying so, never naming the deposed leader, while the
  // quorum stays lost.
  for (int i = 0; i < 10; ++i) {
    const StandbyAnswer again = AskStandby(b_address);
    CHECK(again.code == grpc::StatusCode::UNAVAILABLE);
    CHECK(again.leader.empty());
    std::this_thread::sleep_for(milliseconds(200));
  }

  // The quorum back: a leader is named again (head-a, or head-b itself).
  etcd.Restart(1);
  etcd.Restart(2);
  REQUIRE(WaitFor(
      [&] {
        const LeadershipState state = (*b)->State();
        return state.etcd_failure.empty() && !state.leader.id.empty();
      },
      milliseconds(15000)));
  // Either head-b serves (it won: its standby server is gone), or another
  // leads and head-b redirects to it. head-b may have won the election a
  // moment before it serves, so the test waits for one of the two to settle
  // rather than reading serving() once.
  REQUIRE(WaitFor(
      [&] {
        if ((*b)->serving()) return true;
        return (*b)->State().leader.id != "head-b" &&
               AskStandby(b_address).code == grpc::StatusCode::FAILED_PRECONDITION;
      },
      milliseconds(5000)));
  (*b)->Stop();
  a.Resign();
}
