// Raw bytes made fit for proto3 string fields.
#include <catch2/catch.hpp>

#include "agent.pb.h"
#include "common/utf8.h"

using namespace clusterd;

TEST_CASE("invalid UTF-8 is replaced byte by byte, valid text is kept", "[utf8]") {
  CHECK(IsValidUtf8("plain ascii"));
  CHECK(IsValidUtf8("caf\xC3\xA9 \xE2\x9C\x93 \xF0\x9F\x9A\x80"));
  CHECK(ValidUtf8("caf\xC3\xA9") == "caf\xC3\xA9");
  // A progress bar cut inside a character: the tail has only the first byte.
  CHECK(ValidUtf8("100% \xE2\x96") == "100% \xEF\xBF\xBD\xEF\xBF\xBD");
  CHECK(ValidUtf8("\xFF\xFE") == "\xEF\xBF\xBD\xEF\xBF\xBD");
  CHECK_FALSE(IsValidUtf8("\xC0\xAF"));          // overlong '/'
  CHECK_FALSE(IsValidUtf8("\xED\xA0\x80"));      // a surrogate
  CHECK_FALSE(IsValidUtf8("\xF4\x90\x80\x80"));  // above U+10FFFF
  CHECK(IsValidUtf8(ValidUtf8("\xC0\xAF\xED\xA0\x80x")));
}

TEST_CASE("every string field of a message is cleaned, bytes fields are not", "[utf8]") {
  AgentMessage message;
  auto* exited = message.mutable_rank_exited();
  exited->set_log_tail("epoch 3 \xE2\x96");
  exited->set_error("bad \xFF");
  exited->add_outputs_missing("r\xE9sum\xE9.txt");  // Latin-1
  AgentMessage log;
  log.mutable_log()->set_data("\xFF\xFE raw");
  AgentMessage unreadable;  // what the head saw before: a message it cannot parse
  REQUIRE_FALSE(unreadable.ParseFromString(message.SerializeAsString()));
  CleanStrings(&message);
  CleanStrings(&log);
  AgentMessage parsed;
  REQUIRE(parsed.ParseFromString(message.SerializeAsString()));
  CHECK(parsed.rank_exited().log_tail() == "epoch 3 \xEF\xBF\xBD\xEF\xBF\xBD");
  CHECK(parsed.rank_exited().error() == "bad \xEF\xBF\xBD");
  CHECK(log.log().data() == "\xFF\xFE raw");
}
