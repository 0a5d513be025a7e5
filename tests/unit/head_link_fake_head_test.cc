// HeadLink against a fake head (fake_head_connection.h) on a fake clock:
// registration, heartbeats, the reconnect backoff and a head that stops
// answering, each at the clock's times and with no sleeps for time to pass.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/threads.h"
#include "daemon/agent/head_link.h"
#include "eventually.h"
#include "fake_head_connection.h"
#include "fake_waitable_clock.h"
#include "head_harness.h"

using namespace clusterd;
using namespace clusterd::testing;

namespace {

constexpr Micros kMs = 1000;

// A HeadLink for node "n1" with a fake dialer and clock, and what it handed over.
struct FakeHeadRig {
  FakeWaitableClock clock;
  std::shared_ptr<FakeHeadDialer> dialer = std::make_shared<FakeHeadDialer>(&clock);
  std::atomic<int> registrations{0};
  std::mutex mutex;
  std::vector<HeadMessage> commands;  // under mutex
  std::unique_ptr<HeadLink> link;

  explicit FakeHeadRig(HeadLink::Options options) {
    options.head_address = "fake:1";
    options.token = "token";
    options.clock = &clock;
    options.dialer = dialer;
    auto registration = [] {
      RegisterNode r;
      r.set_name("n1");
      return r;
    };
    link = std::make_unique<HeadLink>(
        options, registration, [] { return NodeUsage(); },
        [this](const HeadMessage& m) {
          std::lock_guard<std::mutex> lock(mutex);
          commands.push_back(m);
        },
        [this](const Registered&) { ++registrations; });
  }
  ~FakeHeadRig() { link->Stop(); }

  size_t heartbeats() const {
    return dialer->last()->CountWritten([](const AgentMessage& m) { return m.has_heartbeat(); });
  }
};

HeadLink::Options Timings(int heartbeat_ms, int reconnect_initial_ms, int reconnect_max_ms, int keepalive_ms = 60'000,
                          int keepalive_timeout_ms = 60'000) {
  HeadLink::Options options;
  options.heartbeat_ms = heartbeat_ms;
  options.reconnect_initial_ms = reconnect_initial_ms;
  options.reconnect_max_ms = reconnect_max_ms;
  options.keepalive_ms = keepalive_ms;
  options.keepalive_timeout_ms = keepalive_timeout_ms;
  return options;
}

}  // namespace

TEST_CASE("the head link registers through its dialer, beats on the clock and hands the head's commands over",
          "[head_link]") {
  QuietLogs quiet;
  FakeHeadRig rig(Timings(500, 100, 400));
  const Micros start = rig.clock.NowMicros();
  auto registered = rig.link->Start(10'000);
  REQUIRE(registered.ok());
  CHECK(registered->name() == "n1");
  REQUIRE(rig.dialer->connection_count() == 1);
  auto head = rig.dialer->last();
  REQUIRE(head->written().front().has_register_());
  REQUIRE(Eventually([&] { return rig.registrations == 1; }));

  // A beat every heartbeat_ms of the clock, and none before.
  REQUIRE(Eventually([&] { return rig.clock.SomeoneWaitsUntil(start + 500 * kMs); }));
  CHECK(rig.heartbeats() == 0);
  rig.clock.AdvanceMillis(500);
  REQUIRE(Eventually([&] { return rig.heartbeats() == 1; }));
  REQUIRE(Eventually([&] { return rig.clock.SomeoneWaitsUntil(start + 1000 * kMs); }));
  CHECK(rig.heartbeats() == 1);
  rig.clock.AdvanceMillis(500);
  REQUIRE(Eventually([&] { return rig.heartbeats() == 2; }));

  // The head's commands reach the handler; its own bookkeeping does not.
  HeadMessage kill;
  kill.mutable_kill()->set_job_id("job-1");
  head->FromHead(kill);
  HeadMessage alive;
  alive.mutable_alive()->set_seq(1);
  head->FromHead(alive);
  HeadMessage stop;
  stop.mutable_stop();
  head->FromHead(stop);
  REQUIRE(Eventually([&] {
    std::lock_guard<std::mutex> lock(rig.mutex);
    return rig.commands.size() == 2;
  }));
  std::lock_guard<std::mutex> lock(rig.mutex);
  CHECK(rig.commands[1].has_stop());
  CHECK(rig.commands[0].kill().job_id() == "job-1");
}

TEST_CASE("a lost head is dialed again after a backoff that doubles on the clock up to its cap, and reset by a "
          "registration",
          "[head_link]") {
  QuietLogs quiet;
  FakeHeadRig rig(Timings(60'000, 100, 400));
  REQUIRE(rig.link->Start(10'000).ok());
  REQUIRE(Eventually([&] { return rig.registrations == 1; }));

  // A kept message goes on the stream; the head goes away before confirming it.
  AgentMessage exit;
  exit.mutable_rank_exited()->set_job_id("job-1");
  REQUIRE(rig.link->Send(exit));
  auto first = rig.dialer->last();
  REQUIRE(Eventually([&] { return first->CountWritten([](const AgentMessage& m) { return m.has_rank_exited(); }) == 1; }));
  rig.dialer->SetUp(false);
  const Micros lost = rig.clock.NowMicros();
  first->End();
  REQUIRE(Eventually([&] { return !rig.link->connected(); }));
  CHECK_FALSE(rig.link->Send(exit));  // refused at once while no stream is up

  // Dials at lost + 100, +200, +400, +400 (the cap): none before its time.
  const std::vector<Micros> waits = {100 * kMs, 200 * kMs, 400 * kMs, 400 * kMs};
  Micros due = lost;
  for (size_t i = 0; i < waits.size(); ++i) {
    due += waits[i];
    INFO("dial " << i + 2);
    REQUIRE(Eventually([&] { return rig.clock.SomeoneWaitsUntil(due); }));
    CHECK(rig.dialer->dial_times().size() == i + 1);
    rig.clock.Advance(due - rig.clock.NowMicros());
    REQUIRE(Eventually([&] { return rig.dialer->dial_times().size() == i + 2; }));
    CHECK(rig.dialer->dial_times().back() == due);
  }

  // The head is back: the next dial registers, and the message the first
  // stream never had confirmed goes again on the new one.
  rig.dialer->SetUp(true);
  due += 400 * kMs;
  REQUIRE(Eventually([&] { return rig.clock.SomeoneWaitsUntil(due); }));
  rig.clock.Advance(due - rig.clock.NowMicros());
  REQUIRE(Eventually([&] { return rig.registrations == 2 && rig.link->connected(); }));
  auto second = rig.dialer->last();
  REQUIRE(second != first);
  REQUIRE(Eventually([&] { return second->CountWritten([](const AgentMessage& m) { return m.has_rank_exited(); }) == 1; }));
  CHECK(rig.link->undelivered() == 1);
  HeadMessage delivered;
  delivered.mutable_delivered()->set_up_to_seq(1);
  second->FromHead(delivered);
  REQUIRE(Eventually([&] { return rig.link->undelivered() == 0; }));

  // Registered again, the backoff starts over at reconnect_initial_ms.
  const Micros lost_again = rig.clock.NowMicros();
  second->End();
  REQUIRE(Eventually([&] { return rig.clock.SomeoneWaitsUntil(lost_again + 100 * kMs); }));
}

TEST_CASE("a head that stops answering loses its stream only where its machine acknowledges nothing either",
          "[head_link]") {
  QuietLogs quiet;
  const bool machine_gone = GENERATE(true, false);
  INFO((machine_gone ? "its machine is gone" : "its machine acknowledges (a stopped head)"));
  // Asks after 1 s of silence; gives up 1 s after the ask.
  FakeHeadRig rig(Timings(500, 100, 400, 1000, 1000));
  const Micros start = rig.clock.NowMicros();
  REQUIRE(rig.link->Start(10'000).ok());
  auto head = rig.dialer->last();
  head->SetAckedMs(machine_gone ? -1 : 0);
  auto asks = [&] {
    return head->CountWritten([](const AgentMessage& m) { return m.has_heartbeat() && m.heartbeat().answer_me(); });
  };
  // The head is silent from its registration on. Beat by beat:
  for (int beat = 1; beat <= 5; ++beat) {
    const Micros at = start + beat * 500 * kMs;
    INFO("beat at " << beat * 500 << " ms");
    REQUIRE(Eventually([&] { return rig.clock.SomeoneWaitsUntil(at) || head->ended(); }));
    if (beat == 2) CHECK(asks() == 0);  // 500 ms of silence: no ask yet
    rig.clock.Advance(at - rig.clock.NowMicros());
    if (beat == 2) REQUIRE(Eventually([&] { return asks() == 1; }));  // 1 s: the ask
  }
  // 2.5 s: the ask went unanswered for more than its timeout.
  if (machine_gone) {
    REQUIRE(Eventually([&] { return head->ended(); }));
    REQUIRE(Eventually([&] { return !rig.link->connected(); }));
  } else {
    // It has been through the 2.5 s beat and waits for the next one, stream kept.
    REQUIRE(Eventually([&] { return rig.clock.SomeoneWaitsUntil(start + 3000 * kMs); }));
    CHECK_FALSE(head->ended());
    CHECK(rig.link->connected());
  }
}

TEST_CASE("a write into a head that stopped reading holds no lock: other threads send and ask meanwhile",
          "[head_link]") {
  QuietLogs quiet;
  FakeHeadRig rig(Timings(60'000, 100, 400));
  REQUIRE(rig.link->Start(10'000).ok());
  auto head = rig.dialer->last();
  head->Stall();
  // The agent's loop sends with nothing queued: the write goes from its
  // thread, and stalls there.
  AgentMessage log;
  log.mutable_log()->set_job_id("job-1");
  std::thread loop([&] { CHECK(rig.link->Send(log)); });
  REQUIRE(Eventually([&] { return head->stalled_writer(); }));
  // Another thread needs only the link's lock: it queues its message and
  // reads the link's state without waiting for the stalled write.
  auto other = std::async(std::launch::async, [&] {
    AgentMessage exit;
    exit.mutable_rank_exited()->set_job_id("job-2");
    return rig.link->Send(exit) && rig.link->undelivered() == 1;
  });
  // A generous bound: it answers at once, or (with a lock held across the
  // write) not before the head reads again.
  const bool answered = other.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  head->Unstall();
  loop.join();
  REQUIRE(answered);
  CHECK(other.get());
  // Both reach the head, in the order they were sent.
  REQUIRE(Eventually([&] { return head->written().size() == 3; }));
  auto written = head->written();
  CHECK(written[1].log().job_id() == "job-1");
  CHECK(written[2].rank_exited().job_id() == "job-2");
}

TEST_CASE("the head link's threads are counted while it runs and gone once it stops", "[head_link][threads]") {
  QuietLogs quiet;
  auto running = [](const std::string& name) {
    auto threads = RunningNamedThreads();
    return threads.count(name) ? threads[name] : 0;
  };
  {
    FakeHeadRig rig(Timings(60'000, 100, 400));
    REQUIRE(rig.link->Start(10'000).ok());
    REQUIRE(Eventually([&] {
      return running("link-reader") == 1 && running("link-heartbeat") == 1 && running("link-writer") == 1;
    }));
  }
  CHECK(running("link-reader") == 0);
  CHECK(running("link-heartbeat") == 0);
  CHECK(running("link-writer") == 0);
}
