// Node tokens on the head's agent port: a node token registers a node, a
// user's token that is not an admin's registers none, and revoking a node
// token ends the streams opened with it at their next frame.
#include <catch2/catch.hpp>

#include "agent_head_server.h"
#include "daemon/agent/head_wire.h"

using namespace clusterd;
using namespace clusterd::testing;

namespace {

AgentMessage Registration(const std::string& name) {
  AgentMessage message;
  message.mutable_register_()->set_name(name);
  message.mutable_register_()->set_name_given(true);
  message.mutable_register_()->set_address("127.0.0.1");
  (*message.mutable_register_()->mutable_total()->mutable_amounts())["CPU"] = 1;
  return message;
}

AgentMessage OneHeartbeat() {
  AgentMessage message;
  message.mutable_heartbeat()->set_seq(1);
  return message;
}

}  // namespace

TEST_CASE("a node token registers a node until it is revoked, and then its stream ends saying so", "[agent_wire][identity]") {
  QuietLogs quiet;
  AgentHeadServer head(0);
  const std::string token = head.core.users().CreateNodeToken("rack 1")->token();
  auto wire = HeadWire::Open("127.0.0.1", head.wire.port(), token, TlsConfig{}, 5000);
  REQUIRE(wire.ok());
  REQUIRE((*wire)->Write(Registration("n1"), false));
  HeadMessage message;
  REQUIRE((*wire)->Read(&message, 20000));
  REQUIRE(message.has_registered());

  REQUIRE(head.core.users().RevokeNodeToken("nodetoken-0001").ok());
  (*wire)->Write(OneHeartbeat(), false);
  while ((*wire)->Read(&message, 20000)) {
  }
  Status ended = (*wire)->Finish();
  CHECK(ended.code() == Status::Code::kUnauthenticated);
  CHECK(ended.message() == "this token was revoked: node token nodetoken-0001");
}

TEST_CASE("a user's token that is not an admin's registers no node", "[agent_wire][identity]") {
  QuietLogs quiet;
  AgentHeadServer head(0);
  AddUserRequest bob;
  bob.set_name("bob");
  const std::string token = head.core.users().AddUser(bob)->token();
  auto wire = HeadWire::Open("127.0.0.1", head.wire.port(), token, TlsConfig{}, 5000);
  REQUIRE(wire.ok());
  (*wire)->Write(Registration("n2"), false);
  HeadMessage message;
  REQUIRE_FALSE((*wire)->Read(&message, 20000));
  Status ended = (*wire)->Finish();
  CHECK(ended.code() == Status::Code::kPermissionDenied);
  CHECK(ended.message().find("user bob may not register a node") == 0);
}
