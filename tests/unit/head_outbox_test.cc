// HeadOutbox (daemon/agent/head_outbox.h): the order messages go to the
// head in, and the kept ones until the head confirms them.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "daemon/agent/head_outbox.h"
#include "head_harness.h"

using namespace clusterd;
using namespace clusterd::testing;

namespace {

AgentMessage Exit(const std::string& job) {
  AgentMessage m;
  m.mutable_rank_exited()->set_job_id(job);
  return m;
}

AgentMessage Log(const std::string& job, size_t bytes = 1) {
  AgentMessage m;
  m.mutable_log()->set_job_id(job);
  m.mutable_log()->set_data(std::string(bytes, 'x'));
  return m;
}

std::vector<std::string> Jobs(const std::vector<AgentMessage>& batch) {
  std::vector<std::string> jobs;
  for (const AgentMessage& m : batch) jobs.push_back(m.has_log() ? m.log().job_id() : m.rank_exited().job_id());
  return jobs;
}

}  // namespace

TEST_CASE("the outbox gives messages in order, urgent ones first, a window's worth at a time", "[head_outbox]") {
  HeadOutbox outbox("head:1");
  outbox.Push(Log("a", 100));
  outbox.Push(Log("b", 100));
  outbox.Push(Log("c", 100));
  outbox.Push(Log("urgent"), /*urgent=*/true);
  // At least one, however small the window.
  CHECK(Jobs(outbox.TakeFront(0)) == std::vector<std::string>{"urgent"});
  auto two = outbox.TakeFront(150);
  CHECK(Jobs(two) == std::vector<std::string>{"a", "b"});
  // Not written: back in front, in their order.
  outbox.PutBack(two);
  CHECK(Jobs(outbox.TakeFront(1 << 20)) == std::vector<std::string>{"a", "b", "c"});
  CHECK(outbox.empty());
}

TEST_CASE("a full outbox refuses more, but an empty one takes any message", "[head_outbox]") {
  HeadOutbox outbox("head:1");
  CHECK(outbox.Fits(HeadOutbox::kMaxQueuedBytes * 2));
  outbox.Push(Log("big", HeadOutbox::kMaxQueuedBytes - 100));
  CHECK_FALSE(outbox.Fits(200));
  CHECK(outbox.Fits(10));
  outbox.TakeFront(0);
  CHECK(outbox.Fits(HeadOutbox::kMaxQueuedBytes * 2));
}

TEST_CASE("kept messages are numbered, go again on a new stream before what waits, and go once confirmed",
          "[head_outbox]") {
  HeadOutbox outbox("head:1");
  AgentMessage first = Exit("e1"), second = Exit("e2");
  outbox.Keep(&first);
  outbox.Keep(&second);
  CHECK(first.delivery_seq() == 1);
  CHECK(second.delivery_seq() == 2);
  CHECK(outbox.undelivered() == 2);
  // e1 was written on the old stream; e2 and a log still wait, and a
  // heartbeat, stale once the stream is gone.
  outbox.Push(first);
  outbox.Written(outbox.TakeFront(0).front());
  outbox.Push(second);
  outbox.Push(Log("l"));
  AgentMessage beat;
  beat.mutable_heartbeat()->set_seq(7);
  outbox.Push(beat, /*urgent=*/true);
  outbox.StartStream();
  CHECK(Jobs(outbox.TakeFront(1 << 20)) == std::vector<std::string>{"e1", "e2", "l"});
  outbox.Delivered(1);
  CHECK(outbox.undelivered() == 1);
  outbox.Delivered(2);
  CHECK(outbox.undelivered() == 0);
}

TEST_CASE("past its limit the outbox forgets the oldest kept message", "[head_outbox]") {
  QuietLogs quiet;
  HeadOutbox outbox("head:1");
  for (size_t i = 0; i < HeadOutbox::kMaxUndelivered + 3; ++i) {
    AgentMessage exit = Exit("e" + std::to_string(i));
    outbox.Keep(&exit);
    outbox.Push(exit);
    outbox.Written(outbox.TakeFront(0).front());
  }
  CHECK(outbox.undelivered() == HeadOutbox::kMaxUndelivered);
  outbox.StartStream();
  auto again = outbox.TakeFront(1 << 30);
  REQUIRE(again.size() == HeadOutbox::kMaxUndelivered);
  CHECK(again.front().rank_exited().job_id() == "e3");
}
